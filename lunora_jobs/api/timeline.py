"""A run's step ledger as a timeline: kind, timing and a short summary of each step's result."""

from __future__ import annotations

import json
from typing import Any

from lunora_jobs.api.schemas import StepOut
from lunora_jobs.engine.steps import parse_step
from lunora_jobs.store.records import StepRecord

SUMMARY_CHARS = 240
_DONE = ("completed", "failed")


def step_view(step: StepRecord) -> StepOut:
    """One timeline row."""
    try:
        kind: str = parse_step(step.name).kind
    except ValueError:
        kind = "other"
    finished = step.updated_at if step.status in _DONE else None
    return StepOut(
        name=step.name, kind=kind, status=step.status, attempt=step.attempt, started_at=step.created_at,
        finished_at=finished, duration_ms=None if finished is None else max(finished - step.created_at, 0),
        summary=_summary(kind, step.result), error=None if step.error is None else str(step.error)[:2000],
    )


def _summary(kind: str, result: Any) -> str | None:
    if not isinstance(result, dict):
        return None if result is None else _short(result)
    if kind == "turn":
        turn = result.get("turn") or {}
        calls = [f"{c.get('name')}({_short(c.get('arguments'), 80)})" for c in turn.get("tool_calls") or []]
        return _short(turn.get("text")) if not calls else "calls " + ", ".join(calls)
    if kind == "tool":
        prefix = "error: " if result.get("is_error") else ""
        return prefix + _short(result.get("output"))
    if kind == "approval":
        verdict = "approved" if result.get("approved") else "rejected"
        by = result.get("decided_by")
        return f"{verdict} by {by}" if by else verdict
    return _short(result)


def _short(value: Any, limit: int = SUMMARY_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"
