"""Stage 4 of a step: plan — the facts out of the ledger rows, the decision from ``plan.py``.

What the earlier stages learned — the step's ``After`` (re-plan a turn, the run already ended, the
run must fail, retry the attempt) and the ledger rows read with the completion — becomes the facts
``plan.plan_turn`` decides on. Nothing here reads or writes either: the same facts give the same
``Decision``, whoever plans (the step, a redelivery, an approval, the sweep).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from lunora_jobs.engine.kinds import After, DispatchNext, Retry, RunEnded, RunFails
from lunora_jobs.engine.memo import stop_condition_met, turn_facts, turn_memo
from lunora_jobs.engine.plan import Decision, plan_turn
from lunora_jobs.loop import StopCondition
from lunora_jobs.store.records import StepRecord


def plan_step(
    after: After | None, steps: Sequence[StepRecord], *, run_id: str, max_turns: int, now: int,
    stop_when: Sequence[StopCondition] = (),
) -> tuple[Decision, After | None]:
    """Decide what follows a step from ``after`` and the run's ledger rows ``steps``.

    Returns the decision and ``after`` as planned from: a ``ReplanTurn`` with its memo and rows
    filled in, so the dispatch stage acts on the same facts without decoding them again."""
    if after is None or isinstance(after, RunEnded):
        return Decision(), after
    if isinstance(after, RunFails):
        return Decision(fail=after.error), after
    if isinstance(after, Retry):
        return Decision(dispatch=(after.task,)), after
    if isinstance(after, DispatchNext):
        return Decision(dispatch=after.tasks), after
    rows = after.steps if after.steps is not None else tuple(steps)
    result = after.result if after.result is not None else turn_memo(rows, after.turn)
    if result is None:
        return Decision(), None  # the turn is not recorded (yet): whoever records it plans
    after = replace(after, result=result, steps=rows)
    facts = turn_facts(run_id, after.turn, result, rows, max_turns=max_turns, now=now, mode=after.mode)

    decision = plan_turn(facts, partial(stop_condition_met, tuple(stop_when), rows, after.turn))
    settled = decision.finish is not None or any(t.kind == "turn" for t in decision.dispatch)
    if settled and result.turn.tool_calls:
        return Decision(decision.dispatch, decision.waits, decision.finish, settled=True), after
    return decision, after
