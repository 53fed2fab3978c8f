"""``sentry_telemetry`` with the real Sentry SDK, its envelopes captured by a transport in memory."""

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
            if payload is not None:
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


def _transactions(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") == "transaction"]


def test_steps_are_transactions_of_one_trace_without_content(events: list[dict[str, Any]]) -> None:
    agent = define_agent(name="support", model="offline", tools=[lookup],
                         telemetry=sentry_telemetry(sentry_sdk))
    harness = agent_harness(agent, [tool_call_turn("c1", "lookup", {"order_id": "o-1"}, usage=Usage(9, 4)),
                                    final_turn("SECRET done")])
    assert harness.run("SECRET prompt").status == "completed"
    sentry_sdk.flush()
    txs = _transactions(events)
    ops = sorted(t["contexts"]["trace"]["op"] for t in txs)
    assert ops == ["gen_ai.execute_tool", "gen_ai.generate", "gen_ai.generate", "gen_ai.invoke_agent"]
    assert len({t["contexts"]["trace"]["trace_id"] for t in txs}) == 1  # one run, one trace
    root = next(t for t in txs if t["contexts"]["trace"]["op"] == "gen_ai.invoke_agent")
    children = [t for t in txs if t is not root]
    root_span = root["contexts"]["trace"]["span_id"]
    assert all(t["contexts"]["trace"]["parent_span_id"] == root_span for t in children)
    turn0 = next(t for t in txs if t["contexts"]["trace"].get("data", {}).get("lunora.step") == "llm:turn:0")
    data = turn0["contexts"]["trace"]["data"]
    assert (data["gen_ai.usage.input_tokens"], data["gen_ai.usage.output_tokens"]) == (9, 4)
    assert turn0["transaction"] == "chat scripted"
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
    tools = [t for t in _transactions(events) if t["contexts"]["trace"]["op"] == "gen_ai.execute_tool"]
    assert sorted(t["contexts"]["trace"]["status"] for t in tools) == ["internal_error", "ok"]
    arguments = [json.loads(t["contexts"]["trace"]["data"]["gen_ai.tool.call.arguments"]) for t in tools]
    assert arguments == [{"x": 1}, {"x": 1}]
