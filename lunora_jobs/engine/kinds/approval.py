"""The approval kind: ``approval:<call_id>`` — a wait for a human decision on a gated tool call.

A turn whose call needs approval leaves the run ``awaiting_input``: the dispatch stage parks it and
``park`` records the call as ``awaiting_approval`` (no task, no lease: the run is only rows until a
decision arrives). The step is never dispatched as a task; it runs when a decision is delivered
with it (``approvals.send_event`` → ``Engine.execute(run_id, "approval:<call_id>", event=...)``):
claimed like any step (two deciders race on the unique row and one wins), its work is the decision
memo, and the planner then resumes the run — an approved call's tool step is dispatched as normal,
a rejected one's too, and the tool step answers it with the rejection instead of running.
"""

from __future__ import annotations

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.kinds.base import ALL_ROWS, After, ReplanTurn, StepKind, StepState, Work
from lunora_jobs.engine.memo import TurnResult, locate_call
from lunora_jobs.engine.steps import APPROVAL_PREFIX, StepName, parse_step, turn_step
from lunora_jobs.errors import ConflictError
from lunora_jobs.store.records import RunRecord, StepCompletion

AWAITING_APPROVAL = "awaiting_approval"
DECIDER_LEASE_MS = 30_000


class ApprovalStep(StepKind):
    """``approval:<call_id>``: resolved by a decision event, never by a task."""

    name, prefix, route, wait = "approval", APPROVAL_PREFIX, "step", True

    def parse(self, step: str) -> StepName | None:
        """``StepName("approval", call_id=...)``."""
        if step.startswith(APPROVAL_PREFIX) and len(step) > len(APPROVAL_PREFIX):
            return StepName("approval", call_id=step[len(APPROVAL_PREFIX) :])
        return None

    def admit(self, deps: EngineDeps, state: StepState) -> str | None:
        """A decision applies to a call of the run's latest turn that waits for one."""
        if state.event is None:
            return "waiting"  # a stray task: only a decision resolves a wait
        assert state.run is not None and state.name.call_id is not None
        latest = latest_turn_memo(deps, state.run)
        located = None if latest is None else locate_call(latest[0], latest[1], state.name.call_id)
        waited = located is not None and located.needs_approval and not located.parts
        if latest is None or not (waited or latest[1].part(state.name.call_id) is not None):
            return "skipped"
        state.subject = latest
        return None

    def claim(self, deps: EngineDeps, state: StepState) -> None:
        """The decider's claim: a short lease, not the agent's step lease (no work runs under it)."""
        state.claim = deps.store.claim_step(
            state.run_id, state.step, owner=f"decider:{deps.worker_id}", lease_ms=DECIDER_LEASE_MS
        )

    def work(self, deps: EngineDeps, state: StepState) -> Work:
        """The decision memo; the run resumes from its turn (the planner dispatches what was decided)."""
        event, subject = state.event, state.subject
        assert event is not None and isinstance(subject, tuple)
        decision = {"approved": bool(event.get("approved")), "reason": event.get("reason"),
                    "decided_by": event.get("by")}
        turn, result = subject
        then = ReplanTurn(turn, result, "recover", resume=True)
        return Work(StepCompletion(result=decision), then, ALL_ROWS)

    def replan(self, deps: EngineDeps, state: StepState) -> After | None:
        """Decided already: the same decision is a no-op, a different one a conflict."""
        assert state.claim is not None
        memo = state.claim.step.result if isinstance(state.claim.step.result, dict) else {}
        earlier = bool(memo.get("approved"))
        if state.event is not None and earlier != bool(state.event.get("approved")):
            raise ConflictError(
                f"tool call {state.name.call_id!r} was already {'approved' if earlier else 'rejected'}; "
                "a decision cannot be changed."
            )
        return None

    def park(self, deps: EngineDeps, run: RunRecord, result: TurnResult, step: str) -> None:
        """Record the call (or the part of a call gated part by part: its own row, keyed
        ``<call_id>.<part>``) as ``awaiting_approval`` with its input (what ``approvals.pending`` lists)."""
        call_id = parse_step(step).call_id
        assert call_id is not None
        call = next((c for c in result.turn.tool_calls if c.id == call_id), None)
        found = result.part(call_id) if call is None else None
        name, input = (call.name, call.arguments) if call is not None else (
            (str(found[1].get("tool")), found[1].get("input")) if found is not None else (None, None))
        if name is not None and deps.store.get_tool_call(run.id, call_id) is None:
            deps.store.upsert_tool_call(run.thread_id, run.id, call_id, name=name, input=input,
                                        status=AWAITING_APPROVAL)


def latest_turn_memo(deps: EngineDeps, run: RunRecord) -> tuple[int, TurnResult] | None:
    """The run's latest completed turn and its memo (what approvals apply to), or None."""
    if run.turns <= 0:
        return None
    memo = deps.store.get_step(run.id, turn_step(run.turns - 1))
    if memo is None or memo.status != "completed":
        return None
    return run.turns - 1, TurnResult.from_json(memo.result)
