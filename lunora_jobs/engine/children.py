"""Child runs: what a delegated tool call (``agent_as_tool``) is in the ledger.

A supervisor's call of an agent tool runs as a run of the specialist agent — a child run, on the
queue like any run. Its identity derives from the parent's tool step (``tool:<name>:<call_id>`` of
run ``<parent>``), never from a clock or a random draw, so every replay of the parent (a retried
turn, a sweep's re-plan, a second worker after a SIGKILL) names the same child and starting it
again is a no-op: one child per call, ever.

The flow (``kinds/child.py`` holds the wait's kind):

1. the turn records the call among its ``children``; the planner parks the run on ``child:<call_id>``
   (no task, no lease, like an approval wait) and the wait's ``park`` starts the child and records
   the call as ``awaiting_child`` with the child's run id;
2. the child's end (completed, failed or cancelled: ``handover.run_ended``) dispatches the parent's
   ``child:<call_id>`` step; it claims only once the child has ended, memoizes its outcome (and adds
   its token totals to the parent's), and resumes the parent;
3. the planner then dispatches the call's tool step, which answers with the child's final answer
   (``answer``) instead of running anything.

Cancelling the parent cancels the children it waits on (``cancel.py``); a wake lost with a crashed
process is repaired by the sweep (``approvals.wake_decided``).
"""

from __future__ import annotations

import uuid
from typing import Any

from lunora_jobs.engine.steps import tool_step
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import RunRecord

AWAITING_CHILD = "awaiting_child"
"""The tool-call status of a delegated call whose child run has not ended."""
CHILD_REFUSED = "child_refused"
"""The tool-call status of a delegated call whose child run could not be started (its error kept)."""
_NAMESPACE = uuid.UUID("5b0a6f4e-52f1-4d0b-9b8e-6c1d4e0a7c21")
MAX_THREAD_KEY = 255


def child_run_id(parent_run_id: str, tool_name: str, call_id: str) -> str:
    """The child run's id: a UUID5 of the parent run and its tool step (stable across replays)."""
    return uuid.uuid5(_NAMESPACE, f"{parent_run_id}\x00{tool_step(tool_name, call_id)}").hex


def child_thread_key(parent_thread_key: str, run_id: str) -> str:
    """The child's own thread: ``<parent thread>/child-<child run id>`` (unique per call even where
    call ids repeat across runs), or ``child-<child run id>`` when that is longer than a key may be."""
    key = f"{parent_thread_key}/child-{run_id}"
    return key if len(key) <= MAX_THREAD_KEY else f"child-{run_id}"


def outcome(child: RunRecord) -> dict[str, Any]:
    """What the parent's ``child:<call_id>`` step memoizes of an ended child run."""
    result = child.result if isinstance(child.result, dict) else {}
    return {
        "child_run_id": child.id, "status": child.status, "text": result.get("text"),
        "output": result.get("output"), "error": child.error,
        "usage": {"input_tokens": child.input_tokens, "output_tokens": child.output_tokens},
    }


def answer(memo: dict[str, Any], agent: str) -> tuple[Any, bool]:
    """The delegated call's tool result from the child's memoized outcome: its final answer (the
    structured output when the child agent declares one), or an error the model can read."""
    status = memo.get("status")
    if status == "completed":
        output = memo.get("output")
        return (output if output is not None else memo.get("text") or ""), False
    if status == "cancelled":
        return f"Error: the delegated run of agent '{agent}' was cancelled before it answered.", True
    return f"Error: the delegated run of agent '{agent}' failed: {memo.get('error') or 'unknown error'}", True


def waited_children(store: AgentStore, run_id: str) -> list[str]:
    """The ids of the child runs ``run_id`` has been parked on (ended ones included)."""
    found = []
    for call in store.list_tool_calls(run_id):
        if call.status == AWAITING_CHILD and isinstance(call.output, dict):
            child = call.output.get("child_run_id")
            if isinstance(child, str):
                found.append(child)
    return found
