"""Human-in-the-loop approvals (blocking mode): decisions in, runs moved on.

A turn whose tool call needs approval parks the run on ``approval:<call_id>`` (the approval kind,
``kinds/approval.py``: no task, no lease, the call recorded as ``awaiting_approval``). This module is
how decisions get to it:

- ``send_event(deps, run_id, {"type": "approval", ...})`` records the decision once on the call's
  row (a conditional write: the first decision wins, a different second one is a ``ConflictError``,
  the same one a no-op), then delivers it with the wait step through the pipeline
  (``Engine.execute(run_id, "approval:<call_id>", event=...)``): the decision is the step's memo,
  and the planner resumes the run — the tool step is dispatched as normal, and a rejected call's
  tool step answers with the rejection instead of running, so the next turn recovers;
- ``pending_approvals`` lists what a run waits on;
- ``wake_decided`` is the sweep's repair: a process that died between recording a decision and
  applying it, or while parking or resuming, is finished from the recorded facts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from lunora_jobs.engine.children import AWAITING_CHILD
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.handover import OPEN, TERMINAL
from lunora_jobs.engine.kinds.approval import AWAITING_APPROVAL, latest_turn_memo
from lunora_jobs.engine.memo import TurnResult, latest_turn
from lunora_jobs.engine.pipeline import Engine, replan
from lunora_jobs.engine.steps import approval_step, child_step, part_id
from lunora_jobs.errors import ConflictError, NotFoundError
from lunora_jobs.store.records import RunRecord, ToolCallRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A tool call waiting for a decision."""

    run_id: str
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]


def pending_approvals(deps: EngineDeps, run: RunRecord) -> list[PendingApproval]:
    """The calls of the run's latest turn still waiting for a decision, in call order (a call gated
    part by part, ``code_tool``'s, lists each undecided part as ``<call_id>.<part>``)."""
    located = latest_turn_memo(deps, run)
    if located is None:
        return []
    _, result = located
    decided = {s.name for s in deps.store.list_steps(run.id) if s.status == "completed"}
    pending = []
    for c in result.turn.tool_calls:
        if c.id not in result.approvals:
            continue
        for part in result.parts.get(c.id, ()):  # a call gated part by part: each part on its own
            pid = part_id(c.id, str(part.get("id")))
            if approval_step(pid) not in decided:
                pending.append(PendingApproval(run.id, pid, str(part.get("tool")), part.get("input") or {}))
        if c.id not in result.parts and approval_step(c.id) not in decided:
            pending.append(PendingApproval(run.id, c.id, c.name, c.arguments))
    return pending


def send_event(deps: EngineDeps, run_id: str, event: dict[str, Any]) -> str:
    """Deliver ``event`` to run ``run_id``; returns ``"applied"`` or ``"unchanged"``.

    Supported: ``{"type": "approval", "call_id": str, "approved": bool, "by": str | None,
    "reason": str | None}``.

    Example::

        send_event(deps, run_id, {"type": "approval", "call_id": "call_1", "approved": True, "by": "u7"})
    """
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
    decision = "approved" if event.get("approved") else "rejected"
    record = store.get_tool_call(run_id, call_id)
    if run.status not in OPEN:
        if record is not None and record.decision == decision:
            return "unchanged"  # the same decision, delivered again after the run ended
        if record is not None and record.decision is not None:
            raise ConflictError(f"tool call {call_id!r} was already {record.decision}; "
                                "a decision cannot be changed.")
        raise ConflictError(f"run {run_id!r} is {run.status}; it no longer waits for a decision.")
    if record is None:  # never parked on this call (or not yet): nothing waits for it
        raise NotFoundError(f"no pending approval {call_id!r} on run {run_id!r}")
    record = store.decide_tool_call(run_id, call_id, decision=decision, decided_by=event.get("by"))
    if record.decision != decision:
        who = f" by {record.decided_by!r}" if record.decided_by else ""
        raise ConflictError(
            f"tool call {call_id!r} was already {record.decision}{who}; a decision cannot be changed."
        )
    applied = _apply(deps, run_id, record, event.get("reason"))
    # Otherwise the agreed decision was applied already, or is being applied by another process now.
    return "applied" if applied == "completed" else "unchanged"


def _apply(deps: EngineDeps, run_id: str, record: ToolCallRecord, reason: str | None) -> str:
    """Run the decision recorded on ``record`` through its wait step; the step's outcome status
    (``conflict`` when the ledger holds another decision)."""
    event = {"approved": record.decision == "approved", "reason": reason, "by": record.decided_by}
    try:
        outcome = Engine(deps).execute(run_id, approval_step(record.id), event=event)
    except ConflictError:
        return "conflict"
    if outcome.status in ("skipped", "missing"):
        raise NotFoundError(f"no pending approval {record.id!r} on run {run_id!r}")
    return outcome.status


def recorded_decision(deps: EngineDeps, run_id: str, call_id: str) -> ToolCallRecord | None:
    """The call's row when a decision is recorded on it but not yet applied to the ledger."""
    record = deps.store.get_tool_call(run_id, call_id)
    if record is None or record.decision is None:
        return None
    step = deps.store.get_step(run_id, approval_step(call_id))
    return record if step is None or step.status != "completed" else None


def wake_decided(deps: EngineDeps, run: RunRecord, grace_ms: int) -> bool:
    """The sweep's repair of a parked run (quiet for ``grace_ms``). True if it moved it.

    - a decision recorded on a call but missing from the ledger (its resolver died in between) is
      applied now;
    - a run that reads ``awaiting_input`` with no call left awaiting approval died while parking
      (before recording its calls) or while resuming (after the ledger got the decision): it is
      re-planned, which records what waits or dispatches what was decided;
    - a run parked on a child run (``agent_as_tool``) whose child ended gets its wait dispatched
      (the child's own wake was lost); while the child runs, the parent is left parked.
    """
    woke = False
    cutoff = deps.now() - grace_ms
    calls = deps.store.list_tool_calls(run.id)
    for call in calls:
        if call.decided_at is None or call.decided_at > cutoff:
            continue
        record = recorded_decision(deps, run.id, call.id)
        if record is None:
            continue
        try:
            applied = _apply(deps, run.id, record, None)
        except NotFoundError as exc:
            log.warning("lunora: could not apply the decision on %s of run %s: %s", call.id, run.id, exc)
            continue
        if applied in ("completed", "replayed"):
            woke = True
        else:
            log.warning("lunora: could not apply the decision on %s of run %s: %s", call.id, run.id, applied)
    waiting_child = False
    for call in calls:  # agent_as_tool: a child that ended without its wake reaching the parent
        if call.status == AWAITING_CHILD:
            state = _wake_child_wait(deps, run, call)
            woke = woke or state == "woken"
            waiting_child = waiting_child or state == "running"
    if not woke and not waiting_child and run.updated_at <= cutoff and all(
        c.status != AWAITING_APPROVAL for c in calls
    ):
        woke = _replan(deps, run)
    return woke


def _wake_child_wait(deps: EngineDeps, run: RunRecord, call: ToolCallRecord) -> str:
    """A call parked on a child run: ``resolved`` (its wait completed), ``running`` (the child has
    not ended: the parent stays parked), or ``woken`` (the child ended but its wake was lost with a
    crashed process or a broker message: the wait step is dispatched now)."""
    wait = child_step(call.id)
    row = deps.store.get_step(run.id, wait)
    if row is not None and row.status == "completed":
        return "resolved"
    child_id = call.output.get("child_run_id") if isinstance(call.output, dict) else None
    child = deps.store.get_run(child_id) if isinstance(child_id, str) else None
    if child is not None and child.status not in TERMINAL:
        return "running"
    if child is None:
        return "resolved"  # nothing to wait for: the re-plan below starts what is missing
    deps.dispatcher.dispatch([StepTask(run.id, wait, "step")])
    return "woken"


def _replan(deps: EngineDeps, run: RunRecord) -> bool:
    steps = deps.store.list_steps(run.id)
    latest = latest_turn(steps)
    agent = deps.agents.get(run.agent)
    if latest is None or latest[1].status != "completed" or agent is None:
        return False
    # Wake first: if a wait remains, the plan parks the run again (and records the call).
    number, row = latest
    replan(deps, run, agent, number, TurnResult.from_json(row.result), steps, "recover", resume=True)
    return True
