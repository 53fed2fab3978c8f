"""lunora_jobs.ai helpers against the local OpenAI-wire server (real openai SDK, real HTTP, SSE streams)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from openai_chat_server import ChatServer, chat_server, fake_embedding, reply
from pydantic import BaseModel

from lunora_jobs.ai import (
    embed,
    embed_many,
    generate_object,
    generate_text,
    stream_object,
    stream_text,
)
from lunora_jobs.config import Settings
from lunora_jobs.errors import (
    ModelCapabilityError,
    ObjectGenerationError,
    StreamStateError,
    ToolApprovalUnavailableError,
)
from lunora_jobs.models.base import ToolCall, Usage
from lunora_jobs.models.streaming import TextDelta, ToolCallDelta, TurnDone
from lunora_jobs.tools import ToolContext, tool

pytestmark = pytest.mark.integration

calls: list[str] = []


@tool
def get_weather(city: str) -> str:
    """Look up the current weather for a city."""
    calls.append(city)
    return f"sunny in {city}"


@tool(needs_approval=lambda i: i["amount"] > 100)
def refund(amount: float) -> str:
    """Refund the customer."""
    calls.append(f"refund {amount}")
    return "refunded"


class Review(BaseModel):
    sentiment: Literal["positive", "neutral", "negative"]
    score: int


@pytest.fixture
def server() -> Iterator[ChatServer]:
    calls.clear()
    with chat_server() as state:
        yield state


@pytest.fixture
def settings(server: ChatServer) -> Settings:
    return Settings(openai_api_key="sk-local", openai_base_url=server.base_url)


def test_generate_text(server: ChatServer, settings: Settings) -> None:
    server.replies.append(
        reply(content="Hello, Ada!", prompt_tokens=30, completion_tokens=4, cached_tokens=8)
    )
    result = generate_text(model="openai:gpt-x", system="Be brief.", prompt="Greet Ada", settings=settings)
    assert result.text == "Hello, Ada!"
    assert result.finish_reason == "stop"
    assert result.usage == Usage(input_tokens=30, output_tokens=4, cache_read_tokens=8)
    assert result.model == "test-model-2026" and len(result.steps) == 1
    assert result.messages == [{"role": "assistant", "content": "Hello, Ada!"}]
    sent = server.requests[0]
    assert sent["model"] == "gpt-x"
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Greet Ada"},
    ]
    assert "stream" not in sent and "tools" not in sent


def test_tool_rounds_run_the_tool_then_answer(server: ChatServer, settings: Settings) -> None:
    server.replies += [
        reply(
            tool_calls=[("call_1", "get_weather", '{"city": "Oslo"}')], finish_reason="tool_calls",
            prompt_tokens=40, completion_tokens=10,
        ),
        reply(content="It is sunny in Oslo.", prompt_tokens=60, completion_tokens=6),
    ]
    result = generate_text(
        model="openai:gpt-x", prompt="Weather in Oslo?", tools=[get_weather], max_steps=3, settings=settings
    )
    assert calls == ["Oslo"]
    assert result.text == "It is sunny in Oslo." and result.finish_reason == "stop"
    assert result.usage == Usage(input_tokens=100, output_tokens=16)
    assert [s.finish_reason for s in result.steps] == ["tool_calls", "stop"]
    assert result.steps[0].tool_results[0].output == "sunny in Oslo"
    second = server.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "call_1"
    assert second[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny in Oslo"}
    assert server.requests[0]["tools"][0]["function"]["name"] == "get_weather"
    assert [m["role"] for m in result.messages] == ["assistant", "tool", "assistant"]


def test_max_steps_bounds_the_loop(server: ChatServer, settings: Settings) -> None:
    server.replies += [
        reply(tool_calls=[(f"call_{i}", "get_weather", '{"city": "Rome"}')], finish_reason="tool_calls")
        for i in range(3)
    ]
    result = generate_text(
        model="openai:gpt-x", prompt="Loop", tools=[get_weather], max_steps=2, settings=settings
    )
    assert len(server.requests) == 2 and calls == ["Rome", "Rome"]
    assert result.finish_reason == "tool_calls" and result.text == ""
    assert result.tool_results[0].call == ToolCall("call_1", "get_weather", {"city": "Rome"})


def test_bad_tool_input_goes_back_to_the_model(server: ChatServer, settings: Settings) -> None:
    server.replies += [
        reply(tool_calls=[("c1", "get_weather", '{"town": "Rome"}'), ("c2", "nope", "{}")],
              finish_reason="tool_calls"),
        reply(content="Sorry."),
    ]
    result = generate_text(
        model="openai:gpt-x", prompt="x", tools=[get_weather], max_steps=2, settings=settings
    )
    assert calls == [] and result.text == "Sorry."
    errors = [r for r in result.steps[0].tool_results if r.is_error]
    assert len(errors) == 2
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "'city' is a required property" in tool_messages[0]["content"]
    assert "Unknown tool 'nope'" in tool_messages[1]["content"]


def test_a_gated_tool_call_is_refused_not_run(server: ChatServer, settings: Settings) -> None:
    server.replies.append(reply(tool_calls=[("c1", "refund", '{"amount": 500}')], finish_reason="tool_calls"))
    with pytest.raises(ToolApprovalUnavailableError, match="needs approval"):
        generate_text(model="openai:gpt-x", prompt="refund", tools=[refund], settings=settings)
    assert calls == []


def test_nested_tools_share_the_callers_context(server: ChatServer, settings: Settings) -> None:
    seen: list[ToolContext] = []

    @tool
    def whoami(ctx: ToolContext) -> str:
        """Say who is calling."""
        seen.append(ctx)
        return ctx.owner or "nobody"

    server.replies += [
        reply(tool_calls=[("c9", "whoami", "{}")], finish_reason="tool_calls"),
        reply(content="ok"),
    ]
    parent = ToolContext(idempotency_key="tool:outer:c0", run_id="run-1", thread_key="t-1", owner="ada",
                         tool_call_id="c0")
    generate_text(model="openai:gpt-x", prompt="who?", tools=[whoami], max_steps=2, context=parent,
                  settings=settings)
    assert seen[0].owner == "ada" and seen[0].run_id == "run-1" and seen[0].thread_key == "t-1"
    assert seen[0].idempotency_key == "tool:outer:c0/tool:whoami:c9"


def test_stream_text_deltas_join_to_the_final_text(server: ChatServer, settings: Settings) -> None:
    text = "Streaming works one piece at a time."
    server.replies.append(reply(content=text, prompt_tokens=12, completion_tokens=9))
    stream = stream_text(model="openai:gpt-x", prompt="Stream please", settings=settings)
    with pytest.raises(StreamStateError):
        _ = stream.text
    deltas = list(stream)
    assert len(deltas) == -(-len(text) // server.stream_piece) and "".join(deltas) == text
    assert stream.text == text and stream.finish_reason == "stop"
    assert stream.usage == Usage(input_tokens=12, output_tokens=9)
    sent = server.requests[0]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_stream_text_async(server: ChatServer, settings: Settings) -> None:
    text = "An async stream, read with async for."
    server.replies.append(reply(content=text))

    async def read() -> tuple[list[str], str, Usage]:
        stream = stream_text(model="openai:gpt-x", prompt="go", settings=settings)
        deltas = [d async for d in stream]
        return deltas, stream.text, stream.usage

    deltas, final, usage = asyncio.run(read())
    assert len(deltas) > 5 and "".join(deltas) == final == text
    assert usage == Usage(input_tokens=11, output_tokens=7)


def test_stream_text_with_tool_rounds(server: ChatServer, settings: Settings) -> None:
    server.replies += [
        reply(content="Checking. ", tool_calls=[("call_7", "get_weather", '{"city": "Lima"}')],
              finish_reason="tool_calls"),
        reply(content="Lima is sunny."),
    ]
    stream = stream_text(
        model="openai:gpt-x", prompt="Lima?", tools=[get_weather], max_steps=2, settings=settings
    )
    events = list(stream.events())
    assert calls == ["Lima"]
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert deltas[0].id == "call_7" and deltas[0].name == "get_weather"
    assert "".join(d.arguments for d in deltas) == '{"city": "Lima"}'
    done = [e.turn for e in events if isinstance(e, TurnDone)]
    assert [t.finish_reason for t in done] == ["tool_calls", "stop"]
    second = "".join(e.text for e in events[events.index(next(e for e in events if isinstance(e, TurnDone))):]
                     if isinstance(e, TextDelta))
    assert second == stream.text == "Lima is sunny."
    assert stream.usage == Usage(input_tokens=22, output_tokens=14)


def test_a_broken_off_stream_finishes_with_result(server: ChatServer, settings: Settings) -> None:
    server.replies.append(reply(content="abcdefghijklmnop"))
    stream = stream_text(model="openai:gpt-x", prompt="x", settings=settings)
    first = next(iter(stream))
    result = stream.result()
    assert first == "abc" and result.text == "abcdefghijklmnop"
    with pytest.raises(StreamStateError):  # read with for; cannot switch to async for
        asyncio.run(stream.aresult())


def test_generate_object_first_try(server: ChatServer, settings: Settings) -> None:
    server.replies.append(reply(content='{"sentiment": "positive", "score": 9}', completion_tokens=12))
    result = generate_object(model="openai:gpt-x", schema=Review, prompt="Great!", settings=settings)
    assert result.object == Review(sentiment="positive", score=9) and result.repairs == 0
    fmt = server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"]["required"] == ["sentiment", "score"]


def test_generate_object_repairs_an_invalid_answer(server: ChatServer, settings: Settings) -> None:
    server.replies += [
        reply(content='{"sentiment": "ecstatic", "score": "ten"}', prompt_tokens=20, completion_tokens=10),
        reply(content='{"sentiment": "positive", "score": 10}', prompt_tokens=50, completion_tokens=10),
    ]
    result = generate_object(model="openai:gpt-x", schema=Review, prompt="Best ever", settings=settings)
    assert result.object == Review(sentiment="positive", score=10)
    assert result.repairs == 1 and result.usage == Usage(input_tokens=70, output_tokens=20)
    retry = server.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"sentiment": "ecstatic", "score": "ten"}'}
    assert retry[-1]["role"] == "user" and "does not match" in retry[-1]["content"]
    assert "sentiment" in retry[-1]["content"]


def test_generate_object_gives_up_after_max_repairs(server: ChatServer, settings: Settings) -> None:
    server.replies += [reply(content="not json"), reply(content='{"score": 1}')]
    with pytest.raises(ObjectGenerationError) as caught:
        generate_object(model="openai:gpt-x", schema=Review, prompt="?", max_repairs=1, settings=settings)
    assert caught.value.text == '{"score": 1}'
    assert caught.value.usage == Usage(input_tokens=22, output_tokens=14)
    assert len(server.requests) == 2


def test_generate_object_with_a_json_schema(server: ChatServer, settings: Settings) -> None:
    schema: dict[str, Any] = {
        "type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["tags"],
    }
    server.replies.append(reply(content='```json\n{"tags": ["a", "b"]}\n```'))
    result = generate_object(model="openai:gpt-x", schema=schema, prompt="tags", settings=settings)
    assert result.object == {"tags": ["a", "b"]}


def test_stream_object_partials_then_the_validated_object(server: ChatServer, settings: Settings) -> None:
    server.replies.append(reply(content='{"sentiment": "negative", "score": 2}'))
    stream = stream_object(model="openai:gpt-x", schema=Review, prompt="Meh", settings=settings)
    partials = list(stream)
    assert partials[0] == {} and {"sentiment": "neg"} in partials
    assert partials[-1] == {"sentiment": "negative", "score": 2}
    assert stream.object == Review(sentiment="negative", score=2)
    assert stream.usage == Usage(input_tokens=11, output_tokens=7)

    server.replies.append(reply(content='{"sentiment": "nope"}'))

    async def read_invalid() -> None:
        async for _ in stream_object(model="openai:gpt-x", schema=Review, prompt="?", settings=settings):
            pass

    with pytest.raises(ObjectGenerationError):
        asyncio.run(read_invalid())


def test_embed_and_embed_many(server: ChatServer, settings: Settings) -> None:
    one = embed(model="openai:text-embedding-x", value="hello world", settings=settings)
    assert one.embedding == pytest.approx(fake_embedding("hello world", 8), abs=1e-6)
    assert one.usage == Usage(input_tokens=2) and one.model == "text-embedding-x"
    values = [f"text number {i}" for i in range(2500)]
    many = embed_many(model="openai:text-embedding-x", values=values, dimensions=4, settings=settings)
    assert len(server.requests) == 3  # 2048 + 452: the API's input cap per request
    assert [len(r["input"]) for r in server.requests[1:]] == [2048, 452]
    assert server.requests[1]["dimensions"] == 4
    assert many.embeddings[2049] == pytest.approx(fake_embedding("text number 2049", 4), abs=1e-6)
    assert many.usage.input_tokens == 3 * 2500 and many.usage.cost_usd is None


def test_embedding_cost_reported_by_the_provider(server: ChatServer, settings: Settings) -> None:
    server.embedding_cost = 0.00002
    result = embed_many(model="openai:text-embedding-x", values=["a", "b"], settings=settings)
    assert result.usage.cost_usd == pytest.approx(0.00002)


def test_models_without_embeddings_say_so(settings: Settings) -> None:
    with pytest.raises(ModelCapabilityError, match="cannot embed"):
        embed(model="offline", value="x", settings=settings)


def test_request_bodies_are_plain_json(server: ChatServer, settings: Settings) -> None:
    server.replies.append(reply(content="ok"))
    generate_text(model="openai:gpt-x", messages=[{"role": "user", "content": "hi"}], settings=settings)
    assert json.loads(json.dumps(server.requests[0]))["messages"] == [{"role": "user", "content": "hi"}]
