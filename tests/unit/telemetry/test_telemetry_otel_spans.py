"""OpenTelemetry spans of an embedded run, collected with the SDK's in-memory exporter."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from telemetry_support import flaky_tool

from lunora_jobs import define_agent, tool
from lunora_jobs.errors import InvalidAgentOptionError
from lunora_jobs.models.base import Usage
from lunora_jobs.models.scripted import final_turn, tool_call_turn
from lunora_jobs.telemetry import otel_telemetry
from lunora_jobs.testing import agent_harness

SECRET_PROMPT = "my card number is 4111-SECRET"
SECRET_ANSWER = "refunded order SECRET-42"


@tool
def lookup_order(order_id: str) -> str:
    """Find an order."""
    return f"order {order_id} is SECRET-shipped"


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _run(provider: TracerProvider, **options: bool) -> str:
    agent = define_agent(name="support", model="offline", tools=[lookup_order],
                         telemetry=otel_telemetry(provider, **options))
    harness = agent_harness(agent, [
        tool_call_turn("c1", "lookup_order", {"order_id": "o-7"}, usage=Usage(11, 3)),
        final_turn(SECRET_ANSWER, usage=Usage(20, 5)),
    ])
    result = harness.run(SECRET_PROMPT, thread_key="t-otel")
    assert result.status == "completed"
    return result.run_id


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans}


def test_one_trace_per_run_with_turn_and_tool_children(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    run_id = _run(provider)
    spans = memory.get_finished_spans()
    names = sorted(span.name for span in spans)
    assert names == sorted([
        "invoke_agent support", "chat scripted", "execute_tool lookup_order", "chat scripted",
        "lunora.run support",
    ]), names
    assert len({span.context.trace_id for span in spans}) == 1  # one run, one trace
    root = _by_name(spans)["invoke_agent support"]
    assert root.parent is None
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["lunora.run_id"] == run_id
    children = [span for span in spans if span is not root]
    assert all(span.parent is not None and span.parent.span_id == root.context.span_id for span in children)

    turns = sorted((s for s in spans if s.name.startswith("chat")), key=lambda s: s.attributes["lunora.step"])
    first, second = turns
    assert first.attributes["lunora.step"] == "llm:turn:0"
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.request.model"] == "scripted"
    assert _tokens(first) == (11, 3)
    assert tuple(first.attributes["gen_ai.response.finish_reasons"]) == ("tool_calls",)
    assert tuple(second.attributes["gen_ai.response.finish_reasons"]) == ("stop",)
    assert _tokens(second) == (20, 5)

    tool_span = _by_name(spans)["execute_tool lookup_order"]
    assert tool_span.attributes["gen_ai.tool.name"] == "lookup_order"
    assert tool_span.attributes["gen_ai.tool.call.id"] == "c1"
    assert tool_span.status.status_code is not StatusCode.ERROR

    end = _by_name(spans)["lunora.run support"]
    assert end.attributes["lunora.run.status"] == "completed"
    assert _tokens(end) == (31, 8)


def test_no_prompt_arguments_text_or_result_by_default(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    _run(provider)
    dump = json.dumps([dict(s.attributes or {}) for s in memory.get_finished_spans()], default=str)
    assert "SECRET" not in dump and "o-7" not in dump


def test_record_inputs_and_outputs_opt_in(exporter: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, memory = exporter
    _run(provider, record_inputs=True, record_outputs=True)
    spans = memory.get_finished_spans()
    tool_span = _by_name(spans)["execute_tool lookup_order"]
    assert json.loads(str(tool_span.attributes["gen_ai.tool.call.arguments"])) == {"order_id": "o-7"}
    assert "SECRET-shipped" in str(tool_span.attributes["gen_ai.tool.call.result"])
    turn0 = next(s for s in spans if s.attributes.get("lunora.step") == "llm:turn:0")
    assert SECRET_PROMPT in str(turn0.attributes["gen_ai.input.messages"])
    turn1 = next(s for s in spans if s.attributes.get("lunora.step") == "llm:turn:1")
    assert SECRET_ANSWER in str(turn1.attributes["gen_ai.output.messages"])
    assert SECRET_PROMPT in str(_by_name(spans)["invoke_agent support"].attributes["gen_ai.input.messages"])


def test_only_record_inputs_keeps_outputs_out(exporter: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, memory = exporter
    _run(provider, record_inputs=True)
    spans = memory.get_finished_spans()
    dump = json.dumps([dict(s.attributes or {}) for s in spans], default=str)
    assert SECRET_PROMPT in dump and SECRET_ANSWER not in dump
    keys = {key for span in spans for key in (span.attributes or {})}
    assert "gen_ai.tool.call.arguments" in keys
    assert not keys & {"gen_ai.output.messages", "gen_ai.tool.call.result"}


def _tokens(span: ReadableSpan) -> tuple[object, object]:
    attributes = span.attributes or {}
    return attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]


def test_a_failed_attempt_is_an_error_span_and_its_retry_a_sibling(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    agent = define_agent(name="support", model="offline", tools=[flaky_tool()], max_attempts=2,
                         telemetry=otel_telemetry(provider))
    harness = agent_harness(agent, [tool_call_turn("c9", "flaky", {"x": 1}), final_turn("done")])
    assert harness.run("go", thread_key="t-fail").status == "completed"
    spans = memory.get_finished_spans()
    attempts = sorted((s for s in spans if s.name == "execute_tool flaky"),
                      key=lambda s: s.attributes["lunora.step.attempt"])
    assert [s.attributes["lunora.step.status"] for s in attempts] == ["retry", "completed"]
    assert attempts[0].status.status_code is StatusCode.ERROR
    assert "backend down" in str(attempts[0].status.description)
    assert attempts[0].attributes["error.type"] == "RuntimeError"
    assert attempts[1].status.status_code is not StatusCode.ERROR
    assert len({s.context.trace_id for s in spans}) == 1


def test_telemetry_must_be_an_integration() -> None:
    with pytest.raises(InvalidAgentOptionError, match="telemetry"):
        define_agent(name="a", model="offline", telemetry=object())
