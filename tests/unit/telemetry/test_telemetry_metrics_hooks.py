"""``MetricsHooks`` on an embedded app: steps, runs, tokens, retries and sweep recoveries counted."""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import REGISTRY
from telemetry_support import flaky_tool

from lunora_jobs import define_agent
from lunora_jobs.engine.dispatch import InProcessDispatcher, StepTask
from lunora_jobs.models.base import Usage
from lunora_jobs.models.scripted import final_turn, tool_call_turn
from lunora_jobs.telemetry.metrics import MetricsHooks
from lunora_jobs.testing import agent_harness


class DropFirstTool(InProcessDispatcher):
    """Loses the first tool task, as a broker that lost a message would."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped = False

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        if not self.dropped and any(t.kind == "tool" for t in tasks):
            self.dropped = True
            tasks = [t for t in tasks if t.kind != "tool"]
        super().dispatch(tasks)


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_steps_runs_tokens_retries_and_sweep_recoveries_are_counted() -> None:
    agent = define_agent(name="metered", model="offline", tools=[flaky_tool()], max_attempts=3)
    harness = agent_harness(agent, [tool_call_turn("m1", "flaky", {"x": 1}, usage=Usage(7, 2)),
                                    final_turn("done", usage=Usage(3, 1))], dispatcher=DropFirstTool())
    harness.app.hooks.add(MetricsHooks())
    before = {
        "tool_done": _value("lunora_steps_total", kind="tool", status="completed"),
        "tool_retry": _value("lunora_steps_total", kind="tool", status="retry"),
        "retries": _value("lunora_step_retries_total", kind="tool"),
        "started": _value("lunora_runs_started_total", agent="metered"),
        "finished": _value("lunora_runs_finished_total", agent="metered", status="completed"),
        "tokens": _value("lunora_tokens_total", agent="metered", model="scripted", direction="input"),
        "swept": _value("lunora_sweep_recoveries_total", action="redispatched"),
        "durations": _value("lunora_step_duration_seconds_count", kind="turn"),
    }
    run_id = harness.run("go").run_id
    assert harness.store.get_run(run_id).status == "running"  # its tool task was lost
    harness.app.sweep(grace_ms=0)  # re-dispatches the tool; its first attempt fails, the retry runs
    assert harness.store.get_run(run_id).status == "completed"

    assert _value("lunora_steps_total", kind="tool", status="completed") - before["tool_done"] == 1
    assert _value("lunora_steps_total", kind="tool", status="retry") - before["tool_retry"] == 1
    assert _value("lunora_step_retries_total", kind="tool") - before["retries"] == 1
    assert _value("lunora_runs_started_total", agent="metered") - before["started"] == 1
    assert _value("lunora_runs_finished_total", agent="metered", status="completed") - before["finished"] == 1
    tokens = _value("lunora_tokens_total", agent="metered", model="scripted", direction="input")
    assert tokens - before["tokens"] == 10
    assert _value("lunora_sweep_recoveries_total", action="redispatched") - before["swept"] == 1
    assert _value("lunora_step_duration_seconds_count", kind="turn") - before["durations"] == 2
