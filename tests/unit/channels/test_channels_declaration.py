"""``on_inbound`` is validated when the agent is declared, and an app whose agents listen on a
channel knows the reply step kind without anyone importing ``channels`` by hand."""

from __future__ import annotations

from typing import Any

import pytest

from lunora_jobs import define_agent
from lunora_jobs.engine.kinds import kind_of
from lunora_jobs.errors import InvalidAgentOptionError
from lunora_jobs.inbound import InboundOptions
from lunora_jobs.runtime import Lunora
from lunora_jobs.store import InMemoryStore


def _map(event: Any) -> Any:
    return event.text


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"channel": "irc", "secret_env": "S", "map": _map}, "channel='irc'"),
        ({"channel": "slack", "secret_env": "not a name", "map": _map}, "secret_env"),
        ({"channel": "slack", "secret_env": "S"}, "'map'"),
        ({"channel": "slack", "secret_env": "S", "map": _map, "secret": "x"}, "secret_env"),
        ([{"channel": "slack", "secret_env": "S", "map": _map}] * 2, "twice"),
        ("slack", "must be a dict"),
    ],
)
def test_a_bad_on_inbound_fails_at_declaration(option: Any, message: str) -> None:
    with pytest.raises(InvalidAgentOptionError, match=message):
        define_agent(name="a", on_inbound=option)


def test_on_inbound_is_kept_as_validated_options() -> None:
    agent = define_agent(name="a", on_inbound={"channel": "github", "secret_env": "GH", "map": _map,
                                               "token_env": "GH_TOKEN", "reply": False})
    assert agent.on_inbound == (InboundOptions("github", "GH", _map, None, "GH_TOKEN", False),)
    assert define_agent(name="b").on_inbound == ()


def test_an_app_with_a_channel_agent_knows_the_reply_step() -> None:
    agent = define_agent(name="a", on_inbound={"channel": "slack", "secret_env": "S", "map": _map})
    Lunora([agent], store=InMemoryStore())
    assert kind_of("reply:slack").name == "reply"
    assert kind_of("reply:slack").after_run_end
