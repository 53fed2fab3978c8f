"""``workers.solo_limits``' parts: which limits a task runs under, and the hard limit's watchdog.

The limits enforced on a real solo worker (a soft limit failing the attempt, a process replaced at
the hard one) are ``tests/chaos/test_time_limits.py``'s, run on both pools.
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from celery.concurrency.solo import TaskPool as SoloPool

from workers.solo_limits import SoloTimeLimits, Watchdog, task_limits

DEADLINE_S = 10.0


Limits = tuple[float | None, float | None]


def _task(soft: float | None, hard: float | None, request_limits: Limits | None) -> object:
    request = SimpleNamespace(timelimit=request_limits)
    return SimpleNamespace(soft_time_limit=soft, time_limit=hard, request=request)


def test_a_task_runs_under_its_messages_limits_else_its_own() -> None:
    assert task_limits(_task(300.0, 310.0, None)) == (300.0, 310.0)
    assert task_limits(_task(300.0, 310.0, (None, None))) == (300.0, 310.0)
    # A message's timelimit header is (hard, soft), as Celery sends it; each overrides the task's.
    assert task_limits(_task(300.0, 310.0, (20.0, 15.0))) == (15.0, 20.0)
    assert task_limits(_task(300.0, 310.0, (20.0, None))) == (300.0, 20.0)
    assert task_limits(_task(None, None, None)) == (None, None)


def _wait_for(calls: list[str], count: int) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while len(calls) < count:
        assert time.monotonic() < deadline, calls
        time.sleep(0.01)


def test_the_watchdog_calls_once_per_armed_deadline_that_passes() -> None:
    calls: list[str] = []
    dog = Watchdog(calls.append)
    dog.arm(0.05, "lunora.tool[a]")
    _wait_for(calls, 1)
    dog.arm(0.05, "lunora.tool[b]")  # the next task: armed again after the first fired
    _wait_for(calls, 2)
    assert calls == ["lunora.tool[a]", "lunora.tool[b]"]


def test_a_deadline_disarmed_before_it_passes_is_not_called() -> None:
    now = [0.0]
    calls: list[str] = []
    dog = Watchdog(calls.append, clock=lambda: now[0])
    dog.arm(0.01, "ended in time")
    dog.disarm()
    now[0] = 5.0  # past the disarmed deadline on the watchdog's clock
    # Not an assertion: time for the thread to wake from its 0.01 s wait, where a deadline that
    # disarm had left armed would fire now (on a host too busy to wake it, this test cannot fail).
    time.sleep(0.05)
    dog.arm(0.01, "late")  # due at 5.01; the thread re-reads the clock within 0.01 s of real time
    now[0] = 6.0
    _wait_for(calls, 1)
    assert calls == ["late"]


def test_steps_under_a_long_limit_wake_the_watchdog_no_more_than_once() -> None:
    """A step arms and disarms: neither may wake the thread, which would take the interpreter's lock
    from the step. The thread reads the clock twice each time it wakes: its reads count its wake-ups."""
    looks: list[float] = []

    def clock() -> float:
        if threading.current_thread().name == "lunora-hard-limit":
            looks.append(time.monotonic())
        return time.monotonic()

    dog = Watchdog(lambda what: None, clock=clock)
    dog.arm(60.0, "lunora.turn[first]")  # the first after an idle spell wakes it, once
    _wait_for(looks, 1)
    for step in range(200):
        time.sleep(0.0002)  # the step's round trips: the interpreter's lock is free meanwhile
        dog.disarm()
        dog.arm(60.0, f"lunora.tool[{step}]")
    dog.disarm()
    woken = len(looks)
    assert woken <= 2, f"the watchdog's thread read its clock {woken} times for 200 steps (twice a wake-up)"


def test_a_shorter_limit_after_a_longer_one_is_called_on_time() -> None:
    calls: list[str] = []
    dog = Watchdog(calls.append)
    dog.arm(3600.0, "lunora.turn[long]")  # the thread now sleeps for an hour
    dog.disarm()
    dog.arm(0.05, "lunora.tool[short]")  # sooner than the thread means to look: it is woken
    _wait_for(calls, 1)
    assert calls == ["lunora.tool[short]"]


class TunedSolo(SoloPool):  # type: ignore[misc]
    """A custom pool derived from the solo pool (``workers.pools`` accepts it): it runs tasks in the
    worker process, so the bootstep enforces their limits there too."""


@pytest.mark.parametrize(("pool", "enabled"),
                         [("solo", True), (TunedSolo, True), ("prefork", False), ("threads", False)])
def test_the_bootstep_runs_on_the_solo_pool_only(pool: str | type, enabled: bool) -> None:
    worker = SimpleNamespace(pool_cls=pool)
    assert SoloTimeLimits(worker).enabled is enabled
