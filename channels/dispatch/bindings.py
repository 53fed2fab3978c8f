"""Which agents listen on which channel, with their resolved verification secrets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.inbound import InboundOptions, coerce_inbound


class MissingSecretError(ConfigurationError):
    """An agent's ``on_inbound`` names a ``secret_env`` that is not set; export it and restart."""


@dataclass(frozen=True, slots=True)
class ChannelBinding:
    """One agent's ``on_inbound`` entry for one channel, with the secret read from its variable."""

    agent: str
    options: InboundOptions
    secret: str


def definition_of(agent: Any) -> AgentDefinition:
    """An ``AgentDefinition`` from itself or from a client (``app.agents.support``)."""
    found = agent if isinstance(agent, AgentDefinition) else getattr(agent, "definition", None)
    if not isinstance(found, AgentDefinition):
        raise ConfigurationError(
            f"{agent!r} is not an agent; pass define_agent(...) results or app.agents.<name>."
        )
    return found


def channel_bindings(
    agents: Sequence[AgentDefinition], secret: Callable[[str], str | None]
) -> list[ChannelBinding]:
    """Every ``on_inbound`` entry of ``agents``, in declaration order. A secret variable that is
    unset is a ``MissingSecretError`` now, not a stream of 401s later."""
    bindings = []
    for agent in agents:
        for options in coerce_inbound(f"Agent {agent.name!r}", agent.on_inbound):
            value = secret(options.secret_env)
            if not value:
                raise MissingSecretError(
                    f"Agent {agent.name!r}: on_inbound secret_env {options.secret_env!r} is not set; "
                    f"export {options.secret_env}=<the {options.channel} secret> before starting the ingress."
                )
            bindings.append(ChannelBinding(agent.name, options, value))
    return bindings
