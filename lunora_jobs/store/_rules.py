"""Rules both store implementations apply identically, so ``SqlStore`` and its in-memory twin
cannot drift apart: owner immutability, message-key dedup, tool-call patch fields, approval
decisions and why a step claim failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lunora_jobs.errors import ConflictError
from lunora_jobs.store._codec import RUN_ADD, RUN_SET, check_identity, dump, split_patch
from lunora_jobs.store.records import NewMessage, StepRecord, ThreadRecord

TOOL_CALL_FIELDS = frozenset({"output", "status", "decision", "decided_by", "decided_at"})
DECISIONS = ("approved", "rejected")
AWAITING_APPROVAL = "awaiting_approval"
LAPSABLE = ("running", "awaiting_input")
"""Run statuses whose steps the sweep takes over when their lease lapsed: a run parked on an
approval still runs the other tool calls of its turn (found by the chaos run: a killed worker's
sibling call waited for the human's decision)."""


def owner_conflict(thread: ThreadRecord, owner: str | None) -> None:
    """Raise when ``owner`` is given and is not the thread's (immutable) owner."""
    if owner is not None and thread.owner != owner:
        raise ConflictError(
            f"thread {thread.key!r} already exists with another owner; owners are immutable. "
            "Use a different thread key for this owner."
        )


def unique_by_key(batch: Sequence[NewMessage]) -> list[NewMessage]:
    """The batch without repeated keys (first wins), order kept; validates key lengths."""
    seen: dict[str, NewMessage] = {}
    for message in batch:
        check_identity("message key", message.key)
        seen.setdefault(message.key, message)
    return list(seen.values())


def tool_call_changes(fields: dict[str, Any]) -> dict[str, Any]:
    """Validated column values of a tool-call upsert (``output`` is JSON)."""
    unknown = set(fields) - TOOL_CALL_FIELDS
    if unknown:
        raise ValueError(
            f"cannot set tool call field(s) {sorted(unknown)}; allowed: {sorted(TOOL_CALL_FIELDS)}"
        )
    check_identity("decided_by", fields.get("decided_by"))
    return {k: dump(v) if k == "output" else v for k, v in fields.items()}


def check_decision(decision: str) -> None:
    """Refuse anything but ``approved`` / ``rejected``."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {DECISIONS}, got {decision!r}")


def explain(step: StepRecord, now: int, max_attempts: int) -> str | None:
    """Why a step could not be claimed, or None when it is claimable after all (a lost race)."""
    if step.status == "completed":
        return "completed"
    if step.status == "failed":
        return "failed"
    if step.lease_expires_at > now:
        return "busy"
    if step.attempt >= max_attempts:
        return "exhausted"
    return None


def status_move_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """The run fields of ``transition_run_and_thread``: plain sets only (``ValueError`` for an
    ``add_*`` increment, which goes through ``update_run``)."""
    _, adds = split_patch(fields, RUN_SET, RUN_ADD, "run")
    if adds:
        raise ValueError(f"transition_run_and_thread sets run columns; {sorted(adds)} go through update_run")
    return fields
