"""The child kind: ``child:<call_id>`` — a parent run's wait for the child run of a delegated call.

The run parks on it like on an approval (``awaiting_input``: no task, no lease, no polling worker).
``park`` starts the child run (a no-op when it exists: its id derives from the parent's tool step,
``engine/children.py``) and records the call as ``awaiting_child``. When the child ends, its
``run_ended`` dispatches this step: it claims only once the child has ended (a stray delivery
before that answers ``waiting``), memoizes the child's outcome, adds the child's token totals to
the parent's, and resumes the parent; the planner then dispatches the call's tool step, which
answers with the child's final answer. A child whose start is refused for good (a quota, say) is
recorded as ``child_refused`` and the wait completes at once with the refusal as the call's error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lunora_jobs.engine.cancel import cancel_run
from lunora_jobs.engine.children import AWAITING_CHILD, CHILD_REFUSED, child_run_id, child_thread_key, outcome
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.handover import TERMINAL
from lunora_jobs.engine.kinds.approval import latest_turn_memo
from lunora_jobs.engine.kinds.base import ALL_ROWS, After, ReplanTurn, StepKind, StepState, Work
from lunora_jobs.engine.memo import TurnResult, locate_call
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.start import start_run
from lunora_jobs.engine.steps import CHILD_PREFIX, StepName, parse_step
from lunora_jobs.errors import LunoraError
from lunora_jobs.store.records import RunRecord, StepCompletion


@dataclass(frozen=True, slots=True)
class ChildSubject:
    """The turn that made the delegated call, and the child run that ended."""

    turn: int
    result: TurnResult
    memo: dict[str, Any]
    """What the step memoizes: the ended child's outcome (``children.outcome``), or its refused start."""


class ChildStep(StepKind):
    """``child:<call_id>``: resolved by a task the child's end dispatches (not a ``wait`` in the
    event sense: nothing is delivered with it, the child's status in the store is the event)."""

    name, prefix, route = "child", CHILD_PREFIX, "step"

    def parse(self, step: str) -> StepName | None:
        """``StepName("child", call_id=...)``."""
        if step.startswith(CHILD_PREFIX) and len(step) > len(CHILD_PREFIX):
            return StepName("child", call_id=step[len(CHILD_PREFIX) :])
        return None

    def admit(self, deps: EngineDeps, state: StepState) -> str | None:
        """A delegated call of the run's latest turn whose child run has ended; before that: waiting."""
        run = state.run
        assert run is not None and state.name.call_id is not None
        latest = latest_turn_memo(deps, run)
        located = None if latest is None else locate_call(latest[0], latest[1], state.name.call_id)
        if latest is None or located is None or not located.delegated:
            return "skipped"
        child_id = child_run_id(run.id, located.call.name, located.call.id)
        child = deps.store.get_run(child_id)
        ended = child is not None and child.status in TERMINAL
        memo: dict[str, Any] | None = outcome(child) if child is not None and ended else None
        if child is None:  # never started: its start may have been refused for good (park)
            call = deps.store.get_tool_call(run.id, located.call.id)
            if call is not None and call.status == CHILD_REFUSED and isinstance(call.output, dict):
                memo = {"child_run_id": child_id, "status": "failed", "text": None, "output": None,
                        "error": call.output.get("error"), "usage": {"input_tokens": 0, "output_tokens": 0}}
        if memo is None:
            return "waiting"
        state.subject = ChildSubject(latest[0], latest[1], memo)
        return None

    def work(self, deps: EngineDeps, state: StepState) -> Work:
        """The child's outcome as the memo; its tokens added to the parent's; the parent resumes."""
        subject = state.subject
        assert isinstance(subject, ChildSubject)
        usage = subject.memo["usage"]
        patch = None
        if usage["input_tokens"] or usage["output_tokens"]:
            patch = {"add_input_tokens": usage["input_tokens"], "add_output_tokens": usage["output_tokens"]}
        then = ReplanTurn(subject.turn, subject.result, "recover", resume=True)
        return Work(StepCompletion(result=subject.memo, run_patch=patch), then, ALL_ROWS)

    def replan(self, deps: EngineDeps, state: StepState) -> After | None:
        """Delivered again after it completed: re-plan (the tool step's dispatch may have been lost)."""
        subject = state.subject
        if not isinstance(subject, ChildSubject):
            return None
        return ReplanTurn(subject.turn, subject.result, "recover", resume=True)

    def park(self, deps: EngineDeps, run: RunRecord, result: TurnResult, step: str) -> None:
        """Start the child (idempotent) and record the call as ``awaiting_child``. Parking again (a
        replay, the sweep) finds the child: if it has ended already, its wake is dispatched now."""
        call_id = parse_step(step).call_id
        call = next((c for c in result.turn.tool_calls if c.id == call_id), None)
        tool = None if call is None else deps.agent(run.agent).tools.get(call.name)
        if call is None or tool is None or tool.delegate is None:
            return
        child_id = child_run_id(run.id, call.name, call.id)
        child = deps.store.get_run(child_id)
        if child is None:
            key = child_thread_key(run_info(run).thread_key, child_id)
            try:
                start_run(deps, deps.agent(tool.delegate.name), input=call.arguments.get("input") or "",
                          thread_key=key, owner=run.owner, run_id=child_id, tenant=run.tenant,
                          as_system=True, parent={"run_id": run.id, "step": step})
            except LunoraError as exc:  # refused for good (a quota, a thread conflict): the call's answer
                error = {"error": f"{type(exc).__name__}: {exc}"}
                deps.store.upsert_tool_call(run.thread_id, run.id, call.id, name=call.name,
                                            input=call.arguments, status=CHILD_REFUSED, output=error)
                deps.dispatcher.dispatch([StepTask(run.id, step, self.route)])
                return
        if deps.store.get_tool_call(run.id, call.id) is None:
            deps.store.upsert_tool_call(run.thread_id, run.id, call.id, name=call.name, input=call.arguments,
                                        status=AWAITING_CHILD, output={"child_run_id": child_id})
        if child is not None and child.status in TERMINAL:
            deps.dispatcher.dispatch([StepTask(run.id, step, self.route)])  # its wake may have been lost
        current = deps.store.get_run(run.id)
        if current is not None and current.status == "cancelled":
            cancel_run(deps, child_id)  # cancelled while the child was being started
