"""Human-in-the-loop approvals (blocking mode): resolve an ``approval:<call_id>`` wait.

A turn whose tool call needs approval leaves the run ``awaiting_input``: no task, no lease, just
the fact in the turn's memo. A decision is recorded as the ``approval:<call_id>`` ledger row (claim
+ complete, so two deciders race on the unique row and one wins). On approve the tool step is
dispatched exactly as normal; on reject the tool step is completed with a tool message explaining
the rejection, so the next turn recovers. Then the run is re-planned from the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lunora_jobs.engine.advance import advance_turn
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.ledger import locate_call
from lunora_jobs.engine.steps import approval_step, tool_step, turn_step
from lunora_jobs.engine.tool import LocatedCall, tool_result_completion
from lunora_jobs.engine.turn import TurnResult
from lunora_jobs.errors import ConflictError, NotFoundError
from lunora_jobs.store.records import RunRecord, StepCompletion

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
