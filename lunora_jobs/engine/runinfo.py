"""What the engine keeps in ``agent_runs.input`` besides the user's input, and in ``agent_runs.result``.

The run row is read by every step anyway, so the values a step needs and that must not be
re-evaluated on replay live there: the thread key (for ``ToolContext``) and the system instructions
resolved once at run start (an ``instructions`` callable is never re-run), and the retry policy and
time limit the run started with (a deploy that changes them applies to new runs only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lunora_jobs.models.base import Usage
from lunora_jobs.retry_policy import RetryPolicy
from lunora_jobs.store.records import RunRecord


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The decoded ``agent_runs.input``."""

    input: Any
    thread_key: str
    instructions: str | None
    title: str | None = None
    trace: dict[str, str] | None = None
    """The trace-context carrier the agent's ``telemetry=`` returned at run start (every step of the
    run is parented on it, whichever worker runs it), else None."""
    version: str | None = None
    """The agent's version at run start (``engine/shape.py``); None for runs recorded without it."""
    tools: dict[str, str] | None = None
    """Each tool's digest at run start: what a later deploy of the agent is compared with."""
    parent: dict[str, str] | None = None
    """A child run's parent (``agent_as_tool``): ``{"run_id", "step"}``, the wait step woken when
    this run ends; None for a run nobody delegated."""
    retry: RetryPolicy | None = None
    """The agent's ``retry=`` at run start; None for runs recorded without it (the agent's applies)."""
    timeout_ms: int | None = None
    """The agent's ``run_timeout_s`` at run start, in ms (None: no limit)."""
    deadline: int | None = None
    """Epoch ms past which the run fails with ``RunTimeoutError`` (start, or last retry, + timeout)."""

    def to_json(self) -> dict[str, Any]:
        """The stored form (``trace`` only when there is one)."""
        data: dict[str, Any] = {
            "input": self.input, "thread_key": self.thread_key,
            "instructions": self.instructions, "title": self.title,
        }
        if self.trace:
            data["trace"] = self.trace
        if self.version is not None:
            data["version"], data["tools"] = self.version, self.tools or {}
        if self.parent:
            data["parent"] = self.parent
        if self.retry is not None:
            data["retry"] = self.retry.to_json()
        if self.timeout_ms is not None:
            data["timeout_ms"], data["deadline"] = self.timeout_ms, self.deadline
        return data


_last: tuple[RunRecord, RunInfo] | None = None
"""The last run decoded: a step asks for the same record's info several times (its hooks, its
work, its retry policy), each decode building the ``RetryPolicy`` again."""


def run_info(run: RunRecord) -> RunInfo:
    """Decode a run's stored input (tolerates a bare input written by other producers)."""
    global _last
    last = _last  # one read: another thread may replace it meanwhile
    if last is not None and last[0] is run:
        return last[1]
    info = _decode(run)
    _last = (run, info)
    return info


def _decode(run: RunRecord) -> RunInfo:
    data = run.input
    if isinstance(data, dict) and "thread_key" in data:
        key = str(data["thread_key"])
        trace, tools, parent = data.get("trace"), data.get("tools"), data.get("parent")
        timeout, deadline = data.get("timeout_ms"), data.get("deadline")
        return RunInfo(data.get("input"), key, data.get("instructions"), data.get("title"),
                       trace if isinstance(trace, dict) else None, data.get("version"),
                       tools if isinstance(tools, dict) else None,
                       parent if isinstance(parent, dict) else None, RetryPolicy.from_json(data.get("retry")),
                       timeout if isinstance(timeout, int) else None,
                       deadline if isinstance(deadline, int) else None)
    return RunInfo(data, run.thread_id, None)


def run_result_json(text: str | None, output: Any, usage: Usage, turns: int) -> dict[str, Any]:
    """What ``agent_runs.result`` holds for a finished run."""
    return {"text": text, "output": output, "usage": usage.to_json(), "turns": turns}


def recorded_deadline(run: RunRecord) -> int | None:
    """The run's deadline (epoch ms) without decoding the rest of its input: read at every step."""
    data = run.input
    deadline = data.get("deadline") if isinstance(data, dict) else None
    return deadline if isinstance(deadline, int) else None


def recorded_max_attempts(run: RunRecord) -> int | None:
    """The ``max_attempts`` of the retry policy the run recorded (None: it recorded none)."""
    data = run.input
    policy = data.get("retry") if isinstance(data, dict) else None
    attempts = policy.get("max_attempts") if isinstance(policy, dict) else None
    return attempts if isinstance(attempts, int) else None


def timeout_error(run: RunRecord, late_ms: int, where: str) -> str:
    """The error a run past its deadline fails with (``where``: the step it was about to run, or the
    sweep)."""
    return (f"RunTimeoutError: run {run.id!r} passed its run_timeout_s {late_ms / 1000:.1f} s ago ({where}); "
            "raise the agent's run_timeout_s, or retry the run (app.runs.retry) for a fresh time budget")
