"""``braintrust_telemetry`` with the real Braintrust SDK, logging to its in-memory test logger."""

from __future__ import annotations

import json
from typing import Any

from suite_settings import require_module
from telemetry_support import flaky_tool

from lunora_jobs import define_agent
from lunora_jobs.models.base import Usage
from lunora_jobs.models.scripted import final_turn, tool_call_turn
from lunora_jobs.telemetry import braintrust_telemetry
from lunora_jobs.testing import agent_harness

require_module("braintrust")
from braintrust.test_helpers import init_test_logger, memory_logger  # noqa: E402,F401  (a fixture)


def _spans(memory: Any, logger: Any) -> list[dict[str, Any]]:
    logger.flush()
    return [row for row in memory.pop() if row.get("span_attributes")]


def test_steps_are_llm_and_tool_spans_of_the_runs_trace(memory_logger: Any) -> None:  # noqa: F811  (the SDK's fixture)
    logger = init_test_logger("lunora-test")
    agent = define_agent(name="support", model="offline", tools=[flaky_tool()], max_attempts=2,
                         telemetry=braintrust_telemetry(logger))
    harness = agent_harness(agent, [tool_call_turn("c1", "flaky", {"x": 1}, usage=Usage(8, 3)),
                                    final_turn("SECRET done")])
    assert harness.run("SECRET prompt").status == "completed"
    spans = _spans(memory_logger, logger)
    by_type = sorted(s["span_attributes"]["type"] for s in spans)
    assert by_type == ["llm", "llm", "task", "tool", "tool"]  # the tool failed once, then ran again
    assert len({s["root_span_id"] for s in spans}) == 1  # one run, one trace
    root = next(s for s in spans if s["span_attributes"]["type"] == "task")
    assert all(s["span_parents"] == [root["span_id"]] for s in spans if s is not root)
    turn0 = next(s for s in spans if (s.get("metadata") or {}).get("lunora.step") == "llm:turn:0")
    assert (turn0["metrics"]["prompt_tokens"], turn0["metrics"]["completion_tokens"]) == (8, 3)
    assert turn0["metadata"]["model"] == "scripted"
    tools = sorted((s for s in spans if s["span_attributes"]["type"] == "tool"),
                   key=lambda s: s["metadata"]["lunora.step.attempt"])
    assert "backend down" in tools[0]["error"] and tools[1].get("error") is None
    assert "SECRET" not in json.dumps(spans, default=str)


def test_inputs_and_outputs_with_opt_in(memory_logger: Any) -> None:  # noqa: F811  (the SDK's fixture)
    logger = init_test_logger("lunora-test")
    agent = define_agent(name="support", model="offline", tools=[flaky_tool()], max_attempts=2,
                         telemetry=braintrust_telemetry(logger, record_inputs=True, record_outputs=True))
    harness = agent_harness(agent, [tool_call_turn("c1", "flaky", {"x": 1}), final_turn("SECRET done")])
    assert harness.run("SECRET prompt").status == "completed"
    spans = _spans(memory_logger, logger)
    dump = json.dumps(spans, default=str)
    assert "SECRET prompt" in dump and "SECRET done" in dump
    tool = next(s for s in spans if s["span_attributes"]["type"] == "tool" and not s.get("error"))
    assert tool["input"] == {"x": 1} and tool["output"] == "ok"
