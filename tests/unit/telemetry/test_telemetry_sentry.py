"""``sentry_telemetry`` with the real Sentry SDK, its envelopes captured by a transport in memory.

The installed SDK is the one tested: sentry-sdk 2 sends each step as a transaction event, sentry-sdk 3
as a span in a ``span`` envelope item; ``_spans`` reads either into one shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from suite_settings import require_module
from telemetry_support import flaky_tool

from lunora_jobs import define_agent, tool
from lunora_jobs.models.base import Usage
from lunora_jobs.models.scripted import final_turn, tool_call_turn
from lunora_jobs.telemetry import sentry_telemetry
from lunora_jobs.testing import agent_harness

sentry_sdk: Any = require_module("sentry_sdk")


class Captured(sentry_sdk.Transport):  # type: ignore[misc]
    """Keeps every envelope instead of sending it."""

    events: list[dict[str, Any]] = []

    def capture_envelope(self, envelope: Any) -> None:
        for item in envelope.items:
            payload = item.payload.json
            if item.type == "span" and payload is not None:  # sentry-sdk 3: a batch of streamed spans
                Captured.events.extend({"type": "span", **span} for span in payload["items"])
            elif payload is not None:
                Captured.events.append(payload)


@pytest.fixture
def events() -> Iterator[list[dict[str, Any]]]:
    Captured.events = []
    sentry_sdk.init(dsn="http://public@127.0.0.1:9/1", transport=Captured, traces_sample_rate=1.0,
                    default_integrations=False)
    try:
        yield Captured.events
    finally:
        sentry_sdk.get_client().close()
        sentry_sdk.get_global_scope().set_client(None)


@tool
def lookup(order_id: str) -> str:
    """Find an order."""
    return f"order {order_id}: SECRET-shipped"


def _spans(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each step's (and the run's) span as ``op``, ``name``, ids, ``status`` (ok / error) and ``data``."""
    spans = []
    for event in events:
        if event.get("type") == "transaction":
            trace = event["contexts"]["trace"]
            status = trace.get("status")  # the run's root sets none
            spans.append({"op": trace["op"], "name": event["transaction"], "trace_id": trace["trace_id"],
                          "span_id": trace["span_id"], "parent_span_id": trace.get("parent_span_id"),
                          "status": "error" if status == "internal_error" else status,
                          "data": trace.get("data", {})})
        elif event.get("type") == "span":
            data = {key: attribute["value"] for key, attribute in event["attributes"].items()}
            spans.append({"op": data["sentry.op"], "name": event["name"], "trace_id": event["trace_id"],
                          "span_id": event["span_id"], "parent_span_id": event.get("parent_span_id"),
                          "status": event["status"], "data": data})
    return spans


def test_steps_are_spans_of_one_trace_without_content(events: list[dict[str, Any]]) -> None:
    agent = define_agent(name="support", model="offline", tools=[lookup],
                         telemetry=sentry_telemetry(sentry_sdk))
    harness = agent_harness(agent, [tool_call_turn("c1", "lookup", {"order_id": "o-1"}, usage=Usage(9, 4)),
                                    final_turn("SECRET done")])
    assert harness.run("SECRET prompt").status == "completed"
    sentry_sdk.flush()
    spans = _spans(events)
    ops = sorted(span["op"] for span in spans)
    assert ops == ["gen_ai.execute_tool", "gen_ai.generate", "gen_ai.generate", "gen_ai.invoke_agent"]
    assert len({span["trace_id"] for span in spans}) == 1  # one run, one trace
    root = next(span for span in spans if span["op"] == "gen_ai.invoke_agent")
    children = [span for span in spans if span is not root]
    assert all(span["parent_span_id"] == root["span_id"] for span in children)
    # The run's trace stays with the run: what this process traces next, another run included, is not
    # put in it.
    assert root["trace_id"] not in (sentry_sdk.get_traceparent() or "")
    assert harness.run("another").status == "completed"
    sentry_sdk.flush()
    assert len({span["trace_id"] for span in _spans(events)}) == 2
    turn0 = next(span for span in spans if span["data"].get("lunora.step") == "llm:turn:0")
    data = turn0["data"]
    assert (data["gen_ai.usage.input_tokens"], data["gen_ai.usage.output_tokens"]) == (9, 4)
    assert turn0["name"] == "chat scripted"
    assert "SECRET" not in json.dumps(events)


def test_a_failed_attempt_goes_to_capture_exception(events: list[dict[str, Any]]) -> None:
    agent = define_agent(name="support", model="offline", tools=[flaky_tool()], max_attempts=2,
                         telemetry=sentry_telemetry(sentry_sdk, record_inputs=True))
    harness = agent_harness(agent, [tool_call_turn("c9", "flaky", {"x": 1}), final_turn("done")])
    assert harness.run("go").status == "completed"
    sentry_sdk.flush()
    errors = [e for e in events if e.get("exception")]
    assert len(errors) == 1
    (exception,) = errors[0]["exception"]["values"]
    assert exception["type"] == "StepFailedError" and "tool:flaky:c9" in exception["value"]
    assert "backend down" in exception["value"]
    tools = [span for span in _spans(events) if span["op"] == "gen_ai.execute_tool"]
    assert sorted(span["status"] for span in tools) == ["error", "ok"]
    arguments = [json.loads(span["data"]["gen_ai.tool.call.arguments"]) for span in tools]
    assert arguments == [{"x": 1}, {"x": 1}]
    failed = next(span for span in tools if span["status"] == "error")
    assert errors[0]["contexts"]["trace"]["trace_id"] == failed["trace_id"]  # the error joins the run's trace
