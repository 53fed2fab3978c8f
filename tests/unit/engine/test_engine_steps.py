"""Step names and message keys: the ledger's vocabulary."""

from __future__ import annotations

import pytest

from lunora_jobs.engine.steps import (
    StepName,
    approval_step,
    assistant_position,
    message_key,
    parse_step,
    tool_position,
    tool_step,
    turn_number,
    turn_step,
    user_position,
)


def test_step_names_follow_the_design() -> None:
    assert turn_step(0) == "llm:turn:0"
    assert turn_step(12) == "llm:turn:12"
    assert tool_step("get_weather", "call_1") == "tool:get_weather:call_1"
    assert approval_step("call_9") == "approval:call_9"


def test_parse_round_trips_every_kind() -> None:
    assert parse_step("llm:turn:3") == StepName("turn", turn=3)
    assert parse_step("tool:get_weather:call_1") == StepName(
        "tool", tool_name="get_weather", call_id="call_1"
    )
    assert parse_step("approval:call_9") == StepName("approval", call_id="call_9")
    assert parse_step("memory:retrieve").kind == "memory"


def test_call_ids_may_contain_colons() -> None:
    name = tool_step("search", "toolu:01:abc")
    assert parse_step(name) == StepName("tool", tool_name="search", call_id="toolu:01:abc")


@pytest.mark.parametrize("bad", ["", "llm:turn:", "llm:turn:x", "tool:", "tool:name", "approval:", "other"])
def test_parse_rejects_names_the_engine_never_makes(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_step(bad)


def test_turn_numbers_must_be_non_negative() -> None:
    with pytest.raises(ValueError):
        turn_step(-1)
    assert turn_number("llm:turn:7") == 7
    assert turn_number("tool:x:y") is None


def test_message_positions_derive_from_the_step_not_the_clock() -> None:
    assert message_key("run-1", "user", user_position()) == "run-1:user:0"
    assert message_key("run-1", "assistant", assistant_position(2)) == "run-1:assistant:2"
    # Turn 0's second call: the same key whichever tool finishes first.
    assert message_key("run-1", "tool", tool_position(0, 1)) == "run-1:tool:0.1"
    keys = {tool_position(t, i) for t in range(3) for i in range(3)}
    assert len(keys) == 9
