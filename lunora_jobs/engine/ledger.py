"""Read facts for ``plan.py`` out of ledger rows (the ``list_steps`` of a run).

``CallMode`` says how to read a tool call that has no ledger row yet: the turn step that just
dispatched it and the last finishing tool treat it as ``inflight`` (its task is queued), while a
recovery (a replayed turn, the sweep) treats it as ``todo`` (its message may be lost) — a duplicate
dispatch costs one claim that answers ``busy`` or ``completed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import EllipsisType
from typing import Literal

from lunora_jobs.engine.plan import CallFacts, CallState, TurnFacts
from lunora_jobs.engine.steps import approval_step, tool_step, turn_number, turn_step
from lunora_jobs.engine.tool import LocatedCall
from lunora_jobs.engine.turn import TurnResult
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import RunRecord, StepRecord

CallMode = Literal["fan_in", "recover"]


def latest_turn(steps: Sequence[StepRecord]) -> tuple[int, StepRecord] | None:
    """The highest-numbered turn row of the ledger, or None before the first turn was claimed."""
    best: tuple[int, StepRecord] | None = None
    for step in steps:
        number = turn_number(step.name)
        if number is not None and (best is None or number > best[0]):
            best = (number, step)
    return best


def completed_turns(steps: Sequence[StepRecord]) -> list[TurnResult]:
    """Every completed turn's memo, by turn number (what ``StopContext.turns`` holds)."""
    found: list[tuple[int, StepRecord]] = []
    for step in steps:
        number = turn_number(step.name)
        if number is not None and step.status == "completed":
            found.append((number, step))
    found.sort(key=lambda item: item[0])
    return [TurnResult.from_json(step.result) for _, step in found]


def locate_call(turn: int, result: TurnResult, call_id: str) -> LocatedCall | None:
    """The call ``call_id`` of turn ``turn`` with its index, or None."""
    for index, call in enumerate(result.turn.tool_calls):
        if call.id == call_id:
            return LocatedCall(turn, index, call, call.id in result.approvals, tuple(result.turn.tool_calls))
    return None


def fan_in_names(located: LocatedCall) -> list[str]:
    """The ledger rows a fan-in after a tool of ``located.turn`` reads: the turn, its tool steps and
    their approval decisions (``turn_facts`` and ``on_step_finish`` look up nothing else)."""
    names = [turn_step(located.turn)]
    for call in located.turn_calls:
        names += [tool_step(call.name, call.id), approval_step(call.id)]
    return names


def find_call(
    store: AgentStore, run: RunRecord, call_id: str, latest: StepRecord | EllipsisType | None = ...
) -> LocatedCall | None:
    """Where tool call ``call_id`` of ``run`` was made, read from the memo of the turn that made it.

    ``latest``: the ledger row of the run's latest turn when the caller already read it (with the
    run, in one round trip: ``reads.read_run``); by default it is read here.
    """
    # The run's latest completed turn made it (a turn's tools settle before the next turn runs).
    if run.turns > 0:
        memo = store.get_step(run.id, turn_step(run.turns - 1)) if latest is ... else latest
        if memo is not None and memo.status == "completed":
            found = locate_call(run.turns - 1, TurnResult.from_json(memo.result), call_id)
            if found is not None:
                return found
    for step in store.list_steps(run.id):  # slow path: a late replay of an older turn's tool
        number = turn_number(step.name)
        if number is not None and step.status == "completed":
            found = locate_call(number, TurnResult.from_json(step.result), call_id)
            if found is not None:
                return found
    return None


def turn_facts(
    run_id: str, turn: int, result: TurnResult, steps: Sequence[StepRecord], *, max_turns: int, now: int,
    mode: CallMode,
) -> TurnFacts:
    """The facts of turn ``turn`` for ``plan_turn``."""
    by_name = {s.name: s for s in steps}
    calls: list[CallFacts] = []
    for call in result.turn.tool_calls:
        approved: bool | None = None
        decision = by_name.get(approval_step(call.id))
        if decision is not None and decision.status == "completed" and isinstance(decision.result, dict):
            approved = bool(decision.result.get("approved"))
        state: CallState
        if call.id in result.invalid:
            state = "done"
        else:
            state = _state(by_name.get(tool_step(call.name, call.id)), now, mode)
        calls.append(CallFacts(call.id, call.name, state, call.id in result.approvals, approved))
    return TurnFacts(run_id, turn, max_turns, tuple(calls))


def _state(step: StepRecord | None, now: int, mode: CallMode) -> CallState:
    if step is None:
        return "todo" if mode == "recover" else "inflight"
    if step.status in ("completed", "failed"):
        return "done"
    if step.lease_expires_at > now:
        return "inflight"
    return "todo" if mode == "recover" else "inflight"
