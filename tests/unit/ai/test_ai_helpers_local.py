"""lunora_jobs.ai on local models (scripted, offline): the loop, the stream fallback, argument checks."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from lunora_jobs.ai import generate_object, generate_text, stream_object, stream_text
from lunora_jobs.errors import ConfigurationError, InvalidAgentOptionError
from lunora_jobs.models.base import Usage
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn
from lunora_jobs.models.streaming import TextDelta, ToolCallDelta, TurnDone, astream_turn, stream_turn
from lunora_jobs.tools import define_tool, tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class City(BaseModel):
    city: str


def test_stream_turn_falls_back_to_one_delta_for_non_streaming_models() -> None:
    model = ScriptedModel([tool_call_turn("c1", "add", {"a": 1, "b": 2}, text="Adding.")])
    events = list(stream_turn(model, [{"role": "user", "content": "1+2"}]))
    assert events[0] == TextDelta("Adding.")
    assert events[1] == ToolCallDelta(0, "c1", "add", '{"a": 1, "b": 2}')
    assert isinstance(events[2], TurnDone) and events[2].turn.tool_calls[0].arguments == {"a": 1, "b": 2}

    async def read() -> list[object]:
        return [e async for e in astream_turn(model, [{"role": "user", "content": "1+2"}])]

    assert asyncio.run(read()) == events


def test_tool_loop_on_a_scripted_model() -> None:
    model = ScriptedModel([
        tool_call_turn("c1", "add", {"a": 2, "b": 3}, usage=Usage(10, 2)),
        final_turn("2 + 3 = 5", usage=Usage(20, 4)),
    ])
    result = generate_text(model=model, prompt="2+3?", tools=[add], max_steps=4)
    assert result.text == "2 + 3 = 5" and result.usage == Usage(30, 6)
    assert result.steps[0].tool_results[0].output == 5 and result.model == "scripted"
    streamed = stream_text(model=model, prompt="2+3?", tools={"adder": add}, max_steps=4)
    assert "".join(streamed) == "2 + 3 = 5" and streamed.steps[0].tool_results[0].output == 5


def test_tools_given_as_a_dict_take_their_key_as_name() -> None:
    unnamed = define_tool(description="Echo.", input_schema={"type": "object"}, execute=lambda i: i)
    model = ScriptedModel([tool_call_turn("c1", "echo", {"x": 1}), final_turn("done")])
    result = generate_text(model=model, prompt="echo", tools={"echo": unnamed}, max_steps=2)
    assert result.steps[0].tool_results[0].output == {"x": 1}


def test_offline_model_answers_objects() -> None:
    result = generate_object(model="offline", schema=City, prompt="I live in Lisbon.")
    assert isinstance(result.object, City) and result.repairs == 0 and result.model == "offline"
    streamed = stream_object(model="offline", schema=City, prompt="I live in Lisbon.").result()
    assert streamed.object == result.object


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({}, ConfigurationError),
        ({"prompt": "a", "messages": []}, ConfigurationError),
        ({"prompt": "a", "max_steps": 0}, ConfigurationError),
        ({"prompt": "a", "max_steps": 101}, ConfigurationError),
        ({"messages": [{"content": "no role"}]}, ConfigurationError),
        ({"prompt": "a", "tools": [lambda: 1]}, ConfigurationError),
        ({"prompt": "a", "tools": [add, add]}, ConfigurationError),
    ],
)
def test_bad_arguments_are_named_errors(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        generate_text(model="offline", **kwargs)  # type: ignore[arg-type]


def test_bad_schemas_and_repair_bounds() -> None:
    with pytest.raises(ConfigurationError, match="schema must be"):
        generate_object(model="offline", schema=str, prompt="x")  # type: ignore[call-overload]
    with pytest.raises(InvalidAgentOptionError):
        generate_object(model="offline", schema={"type": "nonsense"}, prompt="x")
    with pytest.raises(ConfigurationError, match="max_repairs"):
        generate_object(model="offline", schema=City, prompt="x", max_repairs=9)


def test_offline_model_streams_word_by_word() -> None:
    stream = stream_text(model="offline", prompt="Tell me a story about a lighthouse")
    deltas = list(stream)
    assert len(deltas) > 5 and "".join(deltas) == stream.text
    assert stream.text == generate_text(model="offline", prompt="Tell me a story about a lighthouse").text
