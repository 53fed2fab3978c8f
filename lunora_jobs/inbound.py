"""``on_inbound``: how an agent declares that a verified webhook (Slack, GitHub, Discord) starts it.

The options are validated when the agent is declared; the ingress (``channels``) serves them.

Example::

    support = define_agent(
        name="support", instructions="...",
        on_inbound={
            "channel": "slack",                       # "slack" | "github" | "discord"
            "secret_env": "SLACK_SIGNING_SECRET",     # Slack signing secret / GitHub webhook secret /
                                                      # Discord application public key (hex)
            "map": lambda event: event.text,          # InboundEvent -> run input | None (decline)
            "token_env": "SLACK_BOT_TOKEN",           # the API token replies are posted with
        },
    )

``map`` returns the run input (a str, or a dict ``{"input": ..., "thread_key": ..., "title": ...}``)
or None to decline. It never sets the owner: the owner comes from the identity the platform set in
the signed request (``owner``, below, overrides the default ``<channel>:<tenant>:<user>``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lunora_jobs.errors import InvalidAgentOptionError

InboundChannel = Literal["slack", "github", "discord"]
INBOUND_CHANNELS: tuple[InboundChannel, ...] = ("slack", "github", "discord")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_KEYS = ("channel", "secret_env", "map", "owner", "token_env", "reply")


@dataclass(frozen=True, slots=True)
class InboundOptions:
    """One validated ``on_inbound`` entry.

    ``secret_env`` and ``token_env`` name environment variables, read through ``Settings.secret``
    when the ingress starts (never stored in the declaration). ``owner`` maps the verified
    ``ChannelIdentity`` to the run owner; ``reply=False`` keeps the final answer from being posted back.
    """

    channel: InboundChannel
    secret_env: str
    map: Callable[[Any], Any]
    owner: Callable[[Any], str] | None = None
    token_env: str | None = None
    reply: bool = True


def coerce_inbound(where: str, value: Any) -> tuple[InboundOptions, ...]:
    """``on_inbound`` as given (None, one dict, or a list of dicts — one per channel) → options.

    Raises ``InvalidAgentOptionError`` naming the problem and the fix.
    """
    if value is None:
        return ()
    entries: Sequence[Any] = [value] if isinstance(value, Mapping | InboundOptions) else value
    if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
        raise InvalidAgentOptionError(
            f"{where}: on_inbound must be a dict like {{'channel': 'slack', 'secret_env': "
            "'SLACK_SIGNING_SECRET', 'map': fn}} or a list of them."
        )
    options = tuple(_one(where, entry) for entry in entries)
    channels = [o.channel for o in options]
    if len(set(channels)) != len(channels):
        raise InvalidAgentOptionError(
            f"{where}: on_inbound lists a channel twice; give one entry per channel."
        )
    return options


def _one(where: str, entry: Any) -> InboundOptions:
    if isinstance(entry, InboundOptions):
        return entry
    if not isinstance(entry, Mapping):
        raise InvalidAgentOptionError(
            f"{where}: each on_inbound entry must be a dict, got {type(entry).__name__}."
        )
    unknown = sorted(set(entry) - set(_KEYS))
    if unknown:
        hint = " (name the environment variable holding it with 'secret_env')" if "secret" in unknown else ""
        raise InvalidAgentOptionError(
            f"{where}: unknown on_inbound key(s) {unknown}{hint}; keys: {', '.join(_KEYS)}."
        )
    channel = entry.get("channel")
    if channel not in INBOUND_CHANNELS:
        raise InvalidAgentOptionError(
            f"{where}: on_inbound channel={channel!r}; use one of {', '.join(INBOUND_CHANNELS)}."
        )
    for key in ("secret_env", "token_env"):
        name = entry.get(key)
        required = key == "secret_env" or name is not None
        if required and (not isinstance(name, str) or not ENV_NAME.match(name)):
            raise InvalidAgentOptionError(
                f"{where}: on_inbound {key} must name an environment variable (e.g. 'SLACK_SIGNING_SECRET'), "
                f"got {name!r}."
            )
    mapper = entry.get("map")
    if not callable(mapper):
        raise InvalidAgentOptionError(
            f"{where}: on_inbound needs 'map': a callable(event) -> run input | None."
        )
    owner = entry.get("owner")
    if owner is not None and not callable(owner):
        raise InvalidAgentOptionError(f"{where}: on_inbound 'owner' must be a callable(identity) -> str.")
    reply = entry.get("reply", True)
    if not isinstance(reply, bool):
        raise InvalidAgentOptionError(f"{where}: on_inbound 'reply' must be True or False.")
    return InboundOptions(channel, entry["secret_env"], mapper, owner, entry.get("token_env"), reply)
