"""``console_telemetry``, ``combine_telemetry`` and the structured step log, on embedded runs."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest

from lunora_jobs import define_agent, tool
from lunora_jobs.config import Settings
from lunora_jobs.models.base import Usage
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn
from lunora_jobs.runtime import Lunora
from lunora_jobs.store.memory import InMemoryStore
from lunora_jobs.telemetry import StepReport, Telemetry, TelemetryStep, combine_telemetry, console_telemetry
from lunora_jobs.testing import agent_harness


@tool
def lookup(order_id: str) -> str:
    """Find an order."""
    return f"order {order_id}: SECRET-shipped"


SCRIPT = [tool_call_turn("c1", "lookup", {"order_id": "o-1"}, usage=Usage(5, 2)), final_turn("SECRET done")]


class Recorder(Telemetry):
    """Records the order of the calls it gets."""

    def __init__(self, name: str, log: list[str], *, record_outputs: bool = False) -> None:
        self.name, self.log, self.record_outputs = name, log, record_outputs
        self.reports: list[StepReport] = []

    def step_started(self, step: TelemetryStep) -> None:
        self.log.append(f"{self.name}>{step.step}")

    def step_finished(self, step: TelemetryStep, report: StepReport) -> None:
        self.log.append(f"{self.name}<{step.step}")
        self.reports.append(report)


class Broken(Telemetry):
    def step_started(self, step: TelemetryStep) -> None:
        raise RuntimeError("integration bug")


def test_console_lines_carry_run_step_and_usage_but_no_content() -> None:
    stream = io.StringIO()
    agent = define_agent(name="support", model="offline", tools=[lookup], telemetry=console_telemetry(stream))
    result = agent_harness(agent, SCRIPT).run("SECRET prompt", thread_key="t-console")
    lines = [json.loads(line.split(" ", 1)[1]) for line in stream.getvalue().splitlines()]
    # The run's end is recorded by its final turn, so run.end comes just before that turn's line.
    assert [line["event"] for line in lines] == ["run.start", "step", "step", "run.end", "step"]
    turn0 = lines[1]
    assert (turn0["run_id"], turn0["step"], turn0["status"]) == (result.run_id, "llm:turn:0", "completed")
    assert (turn0["input_tokens"], turn0["output_tokens"], turn0["model"]) == (5, 2, "scripted")
    assert lines[2]["tool_name"] == "lookup" and lines[2]["tool_call_id"] == "c1"
    assert lines[3]["status"] == "completed" and lines[3]["turns"] == 2
    assert "SECRET" not in stream.getvalue()


def test_combine_nests_the_first_integration_outermost_and_filters_outputs_per_integration() -> None:
    log: list[str] = []
    outer, inner = Recorder("outer", log, record_outputs=True), Recorder("inner", log)
    combined = combine_telemetry(outer, inner)
    assert combined.record_outputs and not combined.record_inputs
    agent = define_agent(name="support", model="offline", tools=[lookup], telemetry=[combined, Broken()])
    assert agent_harness(agent, SCRIPT).run("go").status == "completed"  # a broken integration is skipped
    assert log[:4] == ["outer>llm:turn:0", "inner>llm:turn:0", "inner<llm:turn:0", "outer<llm:turn:0"]
    tool_outer = next(r for r in outer.reports if r.tool_name == "lookup")
    tool_inner = next(r for r in inner.reports if r.tool_name == "lookup")
    assert "SECRET-shipped" in str(tool_outer.outputs) and tool_inner.outputs is None


def test_combine_needs_an_integration() -> None:
    with pytest.raises(ValueError, match="at least one"):
        combine_telemetry()


def test_the_step_log_is_one_structured_line_per_step(caplog: pytest.LogCaptureFixture) -> None:
    agent = define_agent(name="support", model=ScriptedModel(SCRIPT), tools=[lookup])
    app = Lunora([agent], store=InMemoryStore(), settings=Settings(step_log=True, openai_api_key=None))
    with caplog.at_level(logging.INFO, logger="lunora.steps"):
        handle = app.agents.support.run(input="go", thread_key="t-log")
    lines: list[dict[str, Any]] = [json.loads(r.getMessage().split(" ", 1)[1]) for r in caplog.records
                                   if r.name == "lunora.steps"]
    assert [(line["run_id"], line["step"], line["status"]) for line in lines] == [
        (handle.id, "llm:turn:0", "completed"), (handle.id, "tool:lookup:c1", "completed"),
        (handle.id, "llm:turn:1", "completed"),
    ]
    assert all(line["duration_ms"] >= 0 and line["attempt"] == 1 for line in lines)
