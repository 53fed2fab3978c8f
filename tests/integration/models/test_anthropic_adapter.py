"""AnthropicModel and the ai helpers against a local server speaking the Messages API (real anthropic SDK)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Literal

import pytest
from anthropic_messages_server import MessagesServer, message, messages_server, text_block, tool_use_block
from pydantic import BaseModel
from suite_settings import require_module

from lunora_jobs.ai import embed, generate_object, generate_text, stream_text
from lunora_jobs.config import Settings
from lunora_jobs.errors import ModelCapabilityError
from lunora_jobs.models.base import ToolCall, Usage
from lunora_jobs.models.messages import assistant_message, tool_message
from lunora_jobs.models.registry import resolve_model
from lunora_jobs.models.streaming import TextDelta, ToolCallDelta, TurnDone
from lunora_jobs.tools import tool

anthropic = require_module("anthropic")  # the all-tests extra; CI installs it

from lunora_jobs.models.anthropic import AnthropicModel  # noqa: E402

pytestmark = pytest.mark.integration


@tool
def get_weather(city: str) -> str:
    """Look up the current weather for a city."""
    return f"sunny in {city}"


class Verdict(BaseModel):
    verdict: Literal["yes", "no"]


@pytest.fixture
def server() -> Iterator[MessagesServer]:
    with messages_server() as state:
        yield state


@pytest.fixture
def settings(server: MessagesServer) -> Settings:
    return Settings(anthropic_api_key="sk-ant-local", anthropic_base_url=server.base_url)


def model_for(server: MessagesServer) -> AnthropicModel:
    return AnthropicModel("claude-test", api_key="sk-ant-local", base_url=server.base_url)


def test_generate_maps_the_request_and_the_answer(server: MessagesServer) -> None:
    server.replies.append(
        message(
            text_block("Let me check. "), tool_use_block("toolu_01", "get_weather", {"city": "Berlin"}),
            stop_reason="tool_use", input_tokens=100, output_tokens=40,
            cache_read_input_tokens=300, cache_creation_input_tokens=50,
        )
    )
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Berlin?"},
    ]
    turn = model_for(server).generate(messages, tools=[get_weather.spec()], tool_choice="required")
    assert turn.text == "Let me check. "
    assert turn.tool_calls == [ToolCall("toolu_01", "get_weather", {"city": "Berlin"})]
    assert turn.finish_reason == "tool_calls" and turn.model == "claude-test-2026"
    assert turn.usage == Usage(
        input_tokens=450, output_tokens=40, cache_read_tokens=300, cache_write_tokens=50
    )
    sent = server.requests[0]
    assert sent["model"] == "claude-test" and sent["max_tokens"] == 4096
    assert sent["system"] == "Be brief."
    user = {"role": "user", "content": [{"type": "text", "text": "Weather in Berlin?"}]}
    assert sent["messages"] == [user]
    assert sent["tools"] == [
        {"name": "get_weather", "description": "Look up the current weather for a city.",
         "input_schema": get_weather.input_schema}
    ]
    assert sent["tool_choice"] == {"type": "any"}
    headers = server.headers[0]
    # the key travels as x-api-key or (newer SDKs) a bearer token
    bearer = headers.get("authorization", "").removeprefix("Bearer ")
    assert "sk-ant-local" in (headers.get("x-api-key"), bearer)
    assert headers["anthropic-version"]


def test_history_with_tool_results_and_structured_output(server: MessagesServer) -> None:
    server.replies += [
        message(
            tool_use_block("toolu_1", "get_weather", {"city": "Oslo"}),
            tool_use_block("toolu_2", "get_weather", {"city": "Rome"}), stop_reason="tool_use",
        ),
        message(text_block('{"verdict": "yes"}')),
    ]
    model = model_for(server)
    prompt = [{"role": "user", "content": "Is it sunny in Oslo and Rome?"}]
    first = model.generate(prompt, tools=[get_weather.spec()])
    follow = [
        *prompt, assistant_message(first),
        *(tool_message(c.id, f"sunny in {c.arguments['city']}") for c in first.tool_calls),
    ]
    schema = Verdict.model_json_schema()
    second = model.generate(
        follow, tools=[get_weather.spec()], tool_choice={"type": "tool", "name": "get_weather"},
        output_schema=schema,
    )
    assert second.text == '{"verdict": "yes"}' and second.finish_reason == "stop"
    sent = server.requests[1]
    assert sent["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}},
        ],
    }
    # both results in the one user message after the tool calls, as the API requires
    assert sent["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny in Oslo"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "sunny in Rome"},
        ],
    }
    assert sent["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert sent["output_config"] == {"format": {"type": "json_schema", "schema": schema}}


def test_stream_yields_deltas_and_the_same_turn(server: MessagesServer) -> None:
    body = message(
        text_block("Looking that up for you."), tool_use_block("toolu_9", "get_weather", {"city": "Lima"}),
        stop_reason="tool_use", input_tokens=70, output_tokens=33,
    )
    server.replies += [body, body]
    model = model_for(server)
    events = list(model.stream([{"role": "user", "content": "Lima?"}], tools=[get_weather.spec()]))
    text = [e.text for e in events if isinstance(e, TextDelta)]
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    done = events[-1]
    assert isinstance(done, TurnDone)
    assert len(text) > 3 and "".join(text) == done.turn.text == "Looking that up for you."
    assert calls[0] == ToolCallDelta(index=0, id="toolu_9", name="get_weather", arguments="")
    assert "".join(c.arguments for c in calls) == '{"city": "Lima"}'
    assert done.turn == model.generate([{"role": "user", "content": "Lima?"}], tools=[get_weather.spec()])
    assert server.requests[0]["stream"] is True and "stream" not in server.requests[1]


def test_astream(server: MessagesServer) -> None:
    server.replies.append(message(text_block("Streamed without blocking the loop."), output_tokens=12))

    async def read() -> list[object]:
        return [e async for e in model_for(server).astream([{"role": "user", "content": "go"}])]

    events = asyncio.run(read())
    done = events[-1]
    assert isinstance(done, TurnDone) and done.turn.usage == Usage(input_tokens=21, output_tokens=12)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Streamed without blocking the loop."


def test_overload_is_retried_and_bad_requests_are_not(server: MessagesServer) -> None:
    server.fail_status.append(529)
    server.replies.append(message(text_block("after retry")))
    assert model_for(server).generate([{"role": "user", "content": "x"}]).text == "after retry"
    assert len(server.requests) == 2
    server.fail_status.append(400)
    with pytest.raises(anthropic.BadRequestError):
        model_for(server).generate([{"role": "user", "content": "x"}])
    assert len(server.requests) == 3


def test_registry_resolves_anthropic_from_settings(server: MessagesServer, settings: Settings) -> None:
    model = resolve_model("anthropic:claude-haiku-x", settings)
    assert isinstance(model, AnthropicModel) and model.name == "anthropic:claude-haiku-x"
    server.replies.append(message(text_block("hi")))
    assert model.generate([{"role": "user", "content": "hi"}]).text == "hi"
    assert server.requests[0]["model"] == "claude-haiku-x"


def test_helpers_run_on_anthropic(server: MessagesServer, settings: Settings) -> None:
    server.replies += [
        message(tool_use_block("toolu_a", "get_weather", {"city": "Kyiv"}), stop_reason="tool_use"),
        message(text_block("Sunny in Kyiv.")),
        message(text_block("Once upon a time, briefly.")),
        message(text_block('{"verdict": "maybe"}')),
        message(text_block('{"verdict": "no"}')),
    ]
    result = generate_text(
        model="anthropic:claude-x", prompt="Kyiv?", tools=[get_weather], max_steps=2, settings=settings
    )
    assert result.text == "Sunny in Kyiv." and result.usage == Usage(input_tokens=42, output_tokens=18)
    assert server.requests[1]["messages"][-1]["content"][0]["type"] == "tool_result"

    stream = stream_text(model="anthropic:claude-x", prompt="A story", settings=settings)
    assert "".join(stream) == stream.text == "Once upon a time, briefly."

    obj = generate_object(model="anthropic:claude-x", schema=Verdict, prompt="Yes or no?", settings=settings)
    assert obj.object == Verdict(verdict="no") and obj.repairs == 1

    with pytest.raises(ModelCapabilityError, match="cannot embed"):
        embed(model="anthropic:claude-x", value="x", settings=settings)
