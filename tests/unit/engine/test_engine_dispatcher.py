"""The in-process dispatcher drains iteratively: long runs never grow the stack."""

from __future__ import annotations

import sys

from lunora_jobs.engine.dispatch import InProcessDispatcher, StepTask


def test_a_thousand_chained_steps_run_without_recursion() -> None:
    dispatcher = InProcessDispatcher()
    seen: list[int] = []
    depths: list[int] = []

    def runner(task: StepTask) -> None:
        n = int(task.step.rsplit(":", 1)[1])
        seen.append(n)
        depths.append(len(_stack()))
        if n < 999:
            dispatcher.dispatch([StepTask(task.run_id, f"llm:turn:{n + 1}")])

    dispatcher.bind(runner)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # a recursive dispatcher would blow this long before step 1000
    try:
        dispatcher.dispatch([StepTask("r", "llm:turn:0")])
    finally:
        sys.setrecursionlimit(limit)
    assert seen == list(range(1000))
    assert max(depths) == min(depths)
    assert len(dispatcher.dispatched) == 1000


def test_fan_out_runs_in_dispatch_order_after_the_current_step() -> None:
    dispatcher = InProcessDispatcher()
    order: list[str] = []

    def runner(task: StepTask) -> None:
        order.append(task.step)
        if task.step == "llm:turn:0":
            dispatcher.dispatch([StepTask("r", "tool:a:1", "tool"), StepTask("r", "tool:b:2", "tool")])
            order.append("turn-0-returned")

    dispatcher.bind(runner)
    dispatcher.dispatch([StepTask("r", "llm:turn:0")])
    assert order == ["llm:turn:0", "turn-0-returned", "tool:a:1", "tool:b:2"]


def test_revoke_drops_queued_tasks_of_that_run_only() -> None:
    dispatcher = InProcessDispatcher()
    ran: list[StepTask] = []

    def runner(task: StepTask) -> None:
        ran.append(task)
        if task.step == "first":
            dispatcher.dispatch([StepTask("a", "x"), StepTask("b", "y")])
            dispatcher.revoke("a")

    dispatcher.bind(runner)
    dispatcher.dispatch([StepTask("a", "first")])
    assert [t.step for t in ran] == ["first", "y"]


def _stack() -> list[object]:
    import inspect

    return inspect.stack(0)


def test_the_record_of_dispatched_tasks_stays_bounded() -> None:
    dispatcher = InProcessDispatcher(lambda task: None, history=50)
    for n in range(500):
        dispatcher.dispatch([StepTask("r", f"llm:turn:{n}")])
    assert len(dispatcher.dispatched) == 50
    assert [t.step for t in dispatcher.dispatched][-1] == "llm:turn:499"  # the newest are kept
