"""The hibernation half of approvals, and ``send_event`` — the primitive a decision is delivered by.

``hibernate`` runs when ``plan_turn`` answers with approval waits (``approval:<call_id>``): the run
and its thread move to ``awaiting_input`` (a compare-and-set from ``running``, so a cancelled run is
never revived) and each pending call is recorded in ``agent_tool_calls`` with status
``awaiting_approval``. Then the step simply returns: nothing is queued, no lease is held, no worker
is busy — the run is only rows in the database until a decision arrives.

``send_event(deps, run_id, {"type": "approval", ...})`` records the decision once (a conditional
write on the call's row: the first decision wins, a different second one is a ``ConflictError``, the
same one a no-op) and applies it through ``approvals.resolve_approval``, which writes the ledger's
``approval:<call_id>`` row and re-plans the run — dispatching the tool step (approve) or persisting
the rejection the next turn reads (reject). If the process dies between the two, the sweep re-plans
hibernated runs and finishes the job from the recorded decision.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from lunora_jobs.engine.concurrency import now_ms
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.steps import approval_step, parse_step
from lunora_jobs.engine.turn import TurnResult
from lunora_jobs.errors import ConflictError, NotFoundError
from lunora_jobs.store.records import RunRecord, ToolCallRecord

log = logging.getLogger(__name__)

AWAITING_APPROVAL = "awaiting_approval"
OPEN = ("queued", "running", "awaiting_input")


def hibernate(deps: EngineDeps, run: RunRecord, result: TurnResult, waits: Sequence[str]) -> None:
    """Park the run on ``waits``; idempotent (the sweep and late tools call it again)."""
    store = deps.store
    if store.transition_run(run.id, ("running",), status="awaiting_input"):
        store.patch_thread(run.thread_id, status="awaiting_input")
        deps.events.publish(run_info(run).thread_key,
                            {"type": "status", "status": "awaiting_input", "run_id": run.id})
    calls = {c.id: c for c in result.turn.tool_calls}
    for step in waits:
        call = calls.get(parse_step(step).call_id or "")
        if call is not None and store.get_tool_call(run.id, call.id) is None:
            store.upsert_tool_call(run.thread_id, run.id, call.id, name=call.name, input=call.arguments,
                                   status=AWAITING_APPROVAL)


def recorded_decision(deps: EngineDeps, run_id: str, call_id: str) -> ToolCallRecord | None:
    """The call's row when a decision is recorded on it but not yet applied to the ledger."""
    record = deps.store.get_tool_call(run_id, call_id)
    if record is None or record.decision is None:
        return None
    step = deps.store.get_step(run_id, approval_step(call_id))
    return record if step is None or step.status != "completed" else None


def send_event(deps: EngineDeps, run_id: str, event: dict[str, Any]) -> str:
    """Deliver ``event`` to run ``run_id``; returns ``"applied"`` or ``"unchanged"``.

    Supported: ``{"type": "approval", "call_id": str, "approved": bool, "by": str | None,
    "reason": str | None}``.

    Example::

        send_event(deps, run_id, {"type": "approval", "call_id": "call_1", "approved": True, "by": "u7"})
    """
    from lunora_jobs.engine.approvals import resolve_approval

    if event.get("type") != "approval" or not isinstance(event.get("call_id"), str):
        raise ValueError(
            "send_event supports {'type': 'approval', 'call_id': <id>, 'approved': <bool>, 'by': <viewer>}; "
            f"got {event!r}"
        )
    store = deps.store
    run = store.get_run(run_id)
    if run is None:
        raise NotFoundError(f"no run {run_id!r}")
    call_id: str = event["call_id"]
    approve = bool(event.get("approved"))
    decision = "approved" if approve else "rejected"
    by = event.get("by")
    record = store.get_tool_call(run_id, call_id)
    if run.status not in OPEN:
        if record is not None and record.decision == decision:
            return "unchanged"  # the same decision, delivered again after the run ended
        if record is not None and record.decision is not None:
            raise ConflictError(f"tool call {call_id!r} was already {record.decision}; "
                                "a decision cannot be changed.")
        raise ConflictError(f"run {run_id!r} is {run.status}; it no longer waits for a decision.")
    if record is None:  # never hibernated on this call (or not yet): nothing waits for it
        raise NotFoundError(f"no pending approval {call_id!r} on run {run_id!r}")
    record = store.decide_tool_call(run_id, call_id, decision=decision, decided_by=by)
    if record.decision != decision:
        who = f" by {record.decided_by!r}" if record.decided_by else ""
        raise ConflictError(
            f"tool call {call_id!r} was already {record.decision}{who}; a decision cannot be changed."
        )
    try:
        return resolve_approval(deps, run, call_id, approve=approve, reason=event.get("reason"),
                                decided_by=record.decided_by)
    except ConflictError:
        return "unchanged"  # the agreed decision is being applied by another process right now


def wake_decided(deps: EngineDeps, run: RunRecord, grace_ms: int) -> bool:
    """The sweep's repair of a hibernated run (quiet for ``grace_ms``). True if it moved it.

    - a decision recorded on a call but missing from the ledger (its resolver died in between) is
      applied now;
    - a run that reads ``awaiting_input`` with no call left awaiting approval died while
      hibernating (before recording its calls) or while resuming (after the ledger got the
      decision): it is re-planned, which records what waits or dispatches what was decided.
    """
    from lunora_jobs.engine.approvals import resolve_approval

    woke = False
    cutoff = now_ms(deps) - grace_ms
    calls = deps.store.list_tool_calls(run.id)
    for call in calls:
        if call.decided_at is None or call.decided_at > cutoff:
            continue
        if recorded_decision(deps, run.id, call.id) is None:
            continue
        try:
            resolve_approval(deps, run, call.id, approve=call.decision == "approved",
                             decided_by=call.decided_by)
            woke = True
        except (ConflictError, NotFoundError) as exc:
            log.warning("lunora: could not apply the decision on %s of run %s: %s", call.id, run.id, exc)
    if not woke and run.updated_at <= cutoff and all(c.status != AWAITING_APPROVAL for c in calls):
        woke = _replan(deps, run)
    return woke


def _replan(deps: EngineDeps, run: RunRecord) -> bool:
    from lunora_jobs.engine.advance import advance_turn
    from lunora_jobs.engine.ledger import latest_turn

    steps = deps.store.list_steps(run.id)
    latest = latest_turn(steps)
    agent = deps.agents.get(run.agent)
    if latest is None or latest[1].status != "completed" or agent is None:
        return False
    # Wake first: if a wait remains, advance_turn hibernates the run again (and records the call).
    if deps.store.transition_run(run.id, ("awaiting_input",), status="running"):
        deps.store.patch_thread(run.thread_id, status="running")
    number, row = latest
    current = deps.store.get_run(run.id) or run
    advance_turn(deps, current, agent, number, TurnResult.from_json(row.result), steps, mode="recover")
    return True
