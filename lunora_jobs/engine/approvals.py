"""Human-in-the-loop approvals (blocking mode), all in one place: decisions in, runs moved on.

A turn whose tool call needs approval leaves the run ``awaiting_input`` (``advance.hibernate``): no
task, no lease, just the fact in the turn's memo and the call recorded as ``awaiting_approval``.

- ``send_event(deps, run_id, {"type": "approval", ...})`` records the decision once on the call's
  row (a conditional write: the first decision wins, a different second one is a ``ConflictError``,
  the same one a no-op) and applies it with ``resolve_approval``;
- ``resolve_approval`` writes the ``approval:<call_id>`` ledger row (claim + complete, so two deciders
  race on the unique row and one wins). On approve the tool step is dispatched exactly as normal; on
  reject the tool step is completed with a tool message explaining the rejection, so the next turn
  recovers. Then the run is re-planned from the ledger;
- ``pending_approvals`` lists what a run waits on;
- ``wake_decided`` is the sweep's repair: a process that died between recording a decision and
  applying it, or while hibernating or resuming, is finished from the recorded facts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from lunora_jobs.engine.advance import AWAITING_APPROVAL, advance_turn
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.handover import OPEN
from lunora_jobs.engine.ledger import latest_turn, locate_call
from lunora_jobs.engine.steps import approval_step, tool_step, turn_step
from lunora_jobs.engine.tool import LocatedCall, tool_result_completion
from lunora_jobs.engine.turn import TurnResult
from lunora_jobs.errors import ConflictError, NotFoundError
from lunora_jobs.store.records import RunRecord, StepCompletion, ToolCallRecord

log = logging.getLogger(__name__)

DECIDER_LEASE_MS = 30_000


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A tool call waiting for a decision."""

    run_id: str
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]


def pending_approvals(deps: EngineDeps, run: RunRecord) -> list[PendingApproval]:
    """The calls of the run's latest turn still waiting for a decision, in call order."""
    located = _latest_turn(deps, run)
    if located is None:
        return []
    _, result = located
    decided = {s.name for s in deps.store.list_steps(run.id) if s.status == "completed"}
    return [
        PendingApproval(run.id, c.id, c.name, c.arguments)
        for c in result.turn.tool_calls
        if c.id in result.approvals and approval_step(c.id) not in decided
    ]


def resolve_approval(
    deps: EngineDeps, run: RunRecord, tool_call_id: str, *, approve: bool, reason: str | None = None,
    decided_by: str | None = None,
) -> str:
    """Record the decision and move the run on. Returns ``"applied"`` or ``"unchanged"`` (the same
    decision was already recorded); a contradicting second decision raises ``ConflictError``."""
    latest = _latest_turn(deps, run)
    call = None if latest is None else locate_call(latest[0], latest[1], tool_call_id)
    if latest is None or call is None or tool_call_id not in latest[1].approvals:
        raise NotFoundError(f"no pending approval {tool_call_id!r} on run {run.id!r}")
    store = deps.store
    name = approval_step(tool_call_id)
    claim = store.claim_step(run.id, name, owner=f"decider:{deps.worker_id}", lease_ms=DECIDER_LEASE_MS)
    if claim.outcome == "completed":
        earlier = bool((claim.step.result or {}).get("approved"))
        if earlier != approve:
            raise ConflictError(
                f"tool call {tool_call_id!r} was already {'approved' if earlier else 'rejected'}; "
                "a decision cannot be changed."
            )
        return "unchanged"
    if claim.outcome != "claimed":
        raise ConflictError(f"tool call {tool_call_id!r} is being decided by someone else; retry shortly.")
    if not approve:
        # The rejection message lands before the decision: once a decision row exists, a tool task
        # may claim the step, and for a rejected call it must find it already answered.
        _reject(deps, run, call, reason)
    decision = {"approved": approve, "reason": reason, "decided_by": decided_by}
    if not store.complete_step(run.id, name, claim.step.generation, StepCompletion(result=decision)):
        raise ConflictError(f"the decision on {tool_call_id!r} lost a race; read the thread and retry.")
    _resume(deps, run, latest[0], latest[1])
    return "applied"


def _reject(deps: EngineDeps, run: RunRecord, call: LocatedCall, reason: str | None) -> None:
    text = f"The tool call '{call.call.name}' was rejected by a human reviewer"
    text += f": {reason}" if reason else "."
    step = tool_step(call.call.name, call.call.id)
    claim = deps.store.claim_step(run.id, step, owner=f"decider:{deps.worker_id}", lease_ms=DECIDER_LEASE_MS)
    if claim.outcome == "claimed":
        deps.store.complete_step(
            run.id, step, claim.step.generation, tool_result_completion(run, call, text, is_error=True)
        )


def _resume(deps: EngineDeps, run: RunRecord, turn: int, result: TurnResult) -> None:
    current = deps.store.get_run(run.id) or run
    # Compare-and-set: a run cancelled meanwhile is never revived.
    if deps.store.transition_run(run.id, ("awaiting_input",), status="running"):
        deps.store.patch_thread(run.thread_id, status="running")
    current = deps.store.get_run(run.id) or current
    agent = deps.agent(current.agent)
    advance_turn(deps, current, agent, turn, result, deps.store.list_steps(run.id), mode="recover")


def _latest_turn(deps: EngineDeps, run: RunRecord) -> tuple[int, TurnResult] | None:
    if run.turns <= 0:
        return None
    memo = deps.store.get_step(run.id, turn_step(run.turns - 1))
    if memo is None or memo.status != "completed":
        return None
    return run.turns - 1, TurnResult.from_json(memo.result)


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
    woke = False
    cutoff = deps.now() - grace_ms
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
