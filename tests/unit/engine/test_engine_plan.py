"""plan.py is pure: the same facts always give the same decision, and it reads nothing."""

from __future__ import annotations

import pytest

from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.plan import CallFacts, Decision, TurnFacts, plan_start, plan_turn


def never() -> bool:
    return False


def always() -> bool:
    return True


def exploding() -> bool:
    raise AssertionError("stop_when must only be evaluated once every call has settled")


def test_start_dispatches_turn_zero() -> None:
    assert plan_start("r").dispatch == (StepTask("r", "llm:turn:0", "turn"),)


def test_a_turn_without_tool_calls_finishes_final_even_at_the_cap() -> None:
    assert plan_turn(TurnFacts("r", 0, 8), exploding) == Decision(finish="final")
    assert plan_turn(TurnFacts("r", 7, 8), exploding).finish == "final"


def test_fresh_tool_calls_fan_out_in_call_order() -> None:
    facts = TurnFacts("r", 2, 8, (CallFacts("c1", "a", "todo"), CallFacts("c2", "b", "todo")))
    decision = plan_turn(facts, exploding)
    assert decision.dispatch == (StepTask("r", "tool:a:c1", "tool"), StepTask("r", "tool:b:c2", "tool"))
    assert decision.finish is None and not decision.waits


def test_inflight_calls_are_left_alone() -> None:
    facts = TurnFacts("r", 0, 8, (CallFacts("c1", "a", "done"), CallFacts("c2", "b", "inflight")))
    decision = plan_turn(facts, exploding)
    assert decision.idle


def test_all_done_dispatches_exactly_one_next_turn() -> None:
    facts = TurnFacts("r", 1, 8, (CallFacts("c1", "a", "done"), CallFacts("c2", "b", "done")))
    assert plan_turn(facts, never).dispatch == (StepTask("r", "llm:turn:2", "turn"),)


def test_stop_condition_wins_over_max_turns() -> None:
    facts = TurnFacts("r", 7, 8, (CallFacts("c1", "finalize", "done"),))
    assert plan_turn(facts, always).finish == "stopCondition"
    assert plan_turn(facts, never).finish == "maxTurns"


def test_max_turns_counts_turns_not_steps() -> None:
    facts = TurnFacts("r", 0, 1, (CallFacts("c1", "a", "done"),))
    assert plan_turn(facts, never).finish == "maxTurns"
    facts = TurnFacts("r", 0, 2, (CallFacts("c1", "a", "done"),))
    assert plan_turn(facts, never).dispatch == (StepTask("r", "llm:turn:1", "turn"),)


def test_approval_waits_have_no_task() -> None:
    facts = TurnFacts(
        "r",
        0,
        8,
        (
            CallFacts("c1", "charge", "todo", needs_approval=True),
            CallFacts("c2", "lookup", "todo"),
        ),
    )
    decision = plan_turn(facts, exploding)
    assert decision.waits == ("approval:c1",)
    assert decision.dispatch == (StepTask("r", "tool:lookup:c2", "tool"),)


def test_an_approved_call_runs_and_a_decided_rejection_settles() -> None:
    approved = TurnFacts("r", 0, 8, (CallFacts("c1", "charge", "todo", needs_approval=True, approved=True),))
    assert plan_turn(approved, exploding).dispatch == (StepTask("r", "tool:charge:c1", "tool"),)
    rejected = TurnFacts("r", 0, 8, (CallFacts("c1", "charge", "done", needs_approval=True, approved=False),))
    assert plan_turn(rejected, never).dispatch == (StepTask("r", "llm:turn:1", "turn"),)


@pytest.mark.parametrize("turn", [0, 3, 9])
def test_same_facts_same_decision(turn: int) -> None:
    facts = TurnFacts("r", turn, 10, (CallFacts("c1", "a", "done"), CallFacts("c2", "b", "todo")))
    assert plan_turn(facts, never) == plan_turn(facts, never)


def test_plan_imports_no_io() -> None:
    import ast
    import inspect

    from lunora_jobs.engine import plan

    tree = ast.parse(inspect.getsource(plan))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    } | {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert imported <= {
        "__future__",
        "collections.abc",
        "dataclasses",
        "typing",
        "lunora_jobs.engine.dispatch",
        "lunora_jobs.engine.steps",
    }
