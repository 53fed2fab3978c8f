"""OpenAIModel against a local server speaking the chat-completions wire format (real openai SDK)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest
from openai_chat_server import ChatServer, chat_server, reply
from pydantic import BaseModel

from lunora_jobs.agent import define_agent
from lunora_jobs.config import Settings
from lunora_jobs.models.base import ToolCall, Usage
from lunora_jobs.models.messages import assistant_message, tool_message
from lunora_jobs.models.openai import OpenAIModel
from lunora_jobs.models.registry import resolve_model
from lunora_jobs.tools import tool

pytestmark = pytest.mark.integration


@tool
def get_weather(city: str) -> str:
    """Look up the current weather for a city."""
    return f"sunny in {city}"


class Answer(BaseModel):
    answer: str
    confidence: float


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as state:
        yield state


def model_for(server: ChatServer, **kwargs: object) -> OpenAIModel:
    return OpenAIModel("test-model", api_key="sk-local", base_url=server.base_url, **kwargs)  # type: ignore[arg-type]


def test_tool_calls_round_trip(server: ChatServer) -> None:
    server.replies.append(
        reply(
            tool_calls=[
                ("call_Abc123", "get_weather", '{"city": "Berlin"}'),
                ("call_Def456", "get_weather", "{}"),
            ],
            finish_reason="tool_calls",
            prompt_tokens=120,
            completion_tokens=30,
            cached_tokens=64,
        )
    )
    model = model_for(server)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Berlin?"}]
    turn = model.generate(messages, tools=[get_weather.spec()], tool_choice="required")

    assert turn.tool_calls == [
        ToolCall("call_Abc123", "get_weather", {"city": "Berlin"}),
        ToolCall("call_Def456", "get_weather", {}),
    ]
    assert turn.finish_reason == "tool_calls" and turn.text is None
    assert turn.usage == Usage(input_tokens=120, output_tokens=30, cache_read_tokens=64)
    assert turn.model == "test-model-2026"

    sent = server.requests[0]
    assert sent["model"] == "test-model" and sent["messages"] == messages
    assert sent["tool_choice"] == "required"
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Look up the current weather for a city.",
                "parameters": get_weather.input_schema,
            },
        }
    ]
    assert "response_format" not in sent
    assert server.headers[0]["authorization"] == "Bearer sk-local"


def test_history_with_tool_results_goes_out_in_wire_shape(server: ChatServer) -> None:
    server.replies += [
        reply(tool_calls=[("call_1", "get_weather", '{"city": "Oslo"}')], finish_reason="tool_calls"),
        reply(content="It is sunny in Oslo."),
    ]
    model = model_for(server)
    prompt = [{"role": "user", "content": "Weather in Oslo?"}]
    first = model.generate(prompt, tools=[get_weather.spec()])
    output = get_weather.execute(first.tool_calls[0].arguments, None)  # type: ignore[arg-type]
    follow = [*prompt, assistant_message(first), tool_message(first.tool_calls[0].id, output)]
    second = model.generate(
        follow, tools=[get_weather.spec()], tool_choice={"type": "tool", "name": "get_weather"}
    )

    assert (
        second.text == "It is sunny in Oslo." and second.tool_calls == [] and second.finish_reason == "stop"
    )
    sent = server.requests[1]
    assert sent["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    assert sent["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny in Oslo"}
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}


def test_json_schema_output(server: ChatServer) -> None:
    server.replies.append(
        reply(content='{"answer": "42", "confidence": 0.9}', prompt_tokens=50, completion_tokens=9)
    )
    agent = define_agent(name="structured", model="offline", output=Answer)
    assert agent.output is not None
    turn = model_for(server).generate(
        [{"role": "user", "content": "Meaning of life?"}], output_schema=agent.output.json_schema
    )
    assert agent.output.parse(turn.text) == Answer(answer="42", confidence=0.9)
    assert turn.usage.total_tokens == 59
    fmt = server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"] == agent.output.json_schema and fmt["json_schema"]["name"]
    assert "tools" not in server.requests[0] and "tool_choice" not in server.requests[0]


def test_invalid_tool_arguments_keep_the_raw_text(server: ChatServer) -> None:
    server.replies.append(
        reply(tool_calls=[("call_bad", "get_weather", '{"city": "Ber')], finish_reason="tool_calls")
    )
    turn = model_for(server).generate([{"role": "user", "content": "x"}], tools=[get_weather.spec()])
    assert turn.tool_calls == [ToolCall("call_bad", "get_weather", {}, raw_arguments='{"city": "Ber')]


def test_servers_reporting_stop_with_tool_calls_and_cost(server: ChatServer) -> None:
    # Ollama / llama.cpp say "stop" next to tool calls; OpenRouter reports the billed cost in usage.
    server.replies.append(reply(tool_calls=[("c1", "get_weather", '{"city": "Rome"}')], cost=0.00042))
    turn = model_for(server).generate([{"role": "user", "content": "x"}], tools=[get_weather.spec()])
    assert turn.finish_reason == "tool_calls"
    assert turn.usage.cost_usd == pytest.approx(0.00042)


def test_length_finish_reason(server: ChatServer) -> None:
    server.replies.append(reply(content="truncat", finish_reason="length"))
    assert model_for(server).generate([{"role": "user", "content": "x"}]).finish_reason == "length"


def test_transient_errors_are_retried_by_the_sdk(server: ChatServer) -> None:
    server.fail_status += [503]
    server.replies.append(reply(content="after retry"))
    turn = model_for(server).generate([{"role": "user", "content": "x"}])
    assert turn.text == "after retry" and len(server.requests) == 2


def test_errors_surface_after_retries(server: ChatServer) -> None:
    server.fail_status += [500, 500, 500]
    with pytest.raises(openai.InternalServerError):
        model_for(server).generate([{"role": "user", "content": "x"}])
    assert len(server.requests) == 3  # one try + max_retries=2
    server.fail_status += [400]
    with pytest.raises(openai.BadRequestError):
        model_for(server).generate([{"role": "user", "content": "x"}])
    assert len(server.requests) == 4  # a 4xx is not retried


def test_base_url_from_settings_needs_no_key(server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.replies.append(reply(content="hello from a local server"))
    model = resolve_model("openai:llama3.1", Settings(openai_api_key=None, openai_base_url=server.base_url))
    turn = model.generate([{"role": "user", "content": "hi"}])
    assert turn.text == "hello from a local server"
    assert server.requests[0]["model"] == "llama3.1"
    assert json.dumps(server.requests[0]["messages"]) == json.dumps([{"role": "user", "content": "hi"}])


def test_refusals_surface_as_text(server: ChatServer) -> None:
    body = reply(content=None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    server.replies.append(body)
    turn = model_for(server).generate([{"role": "user", "content": "x"}])
    assert (turn.text, turn.finish_reason) == ("I can't help with that.", "content_filter")
