"""What the engine keeps in ``agent_runs.input`` besides the user's input, and in ``agent_runs.result``.

The run row is read by every step anyway, so the values a step needs and that must not be
re-evaluated on replay live there: the thread key (for ``ToolContext``) and the system instructions
resolved once at run start (an ``instructions`` callable is never re-run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lunora_jobs.models.base import Usage
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
        return data


def run_info(run: RunRecord) -> RunInfo:
    """Decode a run's stored input (tolerates a bare input written by other producers)."""
    data = run.input
    if isinstance(data, dict) and "thread_key" in data:
        key = str(data["thread_key"])
        trace, tools, parent = data.get("trace"), data.get("tools"), data.get("parent")
        return RunInfo(data.get("input"), key, data.get("instructions"), data.get("title"),
                       trace if isinstance(trace, dict) else None, data.get("version"),
                       tools if isinstance(tools, dict) else None,
                       parent if isinstance(parent, dict) else None)
    return RunInfo(data, run.thread_id, None)


def run_result_json(text: str | None, output: Any, usage: Usage, turns: int) -> dict[str, Any]:
    """What ``agent_runs.result`` holds for a finished run."""
    return {"text": text, "output": output, "usage": usage.to_json(), "turns": turns}
