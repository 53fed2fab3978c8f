"""Task time limits on the solo pool, as the prefork pool enforces them.

``lunora worker --pool solo`` runs each step in the worker process itself: no parent pops the message
and hands it through a pipe to a pool process and back, which costs a step 0.8-2.1 ms on a 2-core
machine (``bench/peers.py --solo``, README Performance). Celery enforces no time limit there, and a
step without one could hang its process and keep its lease alive for good. This bootstep enforces a
task's ``soft_time_limit`` and ``time_limit`` (a step's come from ``workers.time_limits``) with the
prefork pool's semantics:

- at the soft limit ``SoftTimeLimitExceeded`` is raised inside the task (``SIGALRM``, from
  ``setitimer``): the engine fails the step's attempt and retries it, as on prefork;
- at the hard limit a watchdog thread replaces the process with a fresh worker, the same command
  line under the same pid (``os.execv``, as Celery's own restart), as the prefork parent replaces a
  pool process past it: the execution is gone, so it never runs beside its retry, and the step's
  lease, no longer renewed (``engine/leases.py``), lapses and the sweep has it retried.

A solo worker runs one step at a time: run as many worker processes as steps should run at once
(replicas, or several ``lunora worker --pool solo`` on one machine). Its tasks must not use
``SIGALRM`` themselves. Other pools are left alone: prefork enforces the limits in its parent.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from celery import bootsteps, signals
from celery.concurrency import get_implementation
from celery.concurrency.solo import TaskPool as SoloPool
from celery.exceptions import SoftTimeLimitExceeded

from lunora_jobs.config import Settings

log = logging.getLogger(__name__)
EXEC_FAILED = 70
"""The exit status of a solo worker past a hard limit whose re-execution failed (EX_SOFTWARE)."""


def task_limits(task: Any) -> tuple[float | None, float | None]:
    """(soft, hard) seconds for the task now running: the message's own limits, else the task's."""
    request_limits = getattr(task.request, "timelimit", None) or (None, None)
    hard, soft = request_limits
    return soft or task.soft_time_limit or None, hard or task.time_limit or None


class Watchdog:
    """One daemon thread that calls ``expired(what)`` once an armed deadline passes unrelieved.

    Arming and disarming only write the deadline: the thread is woken when a deadline is sooner than
    the moment it already means to look (the first after an idle spell), else it finds the new one
    when it wakes at the old. A step's ``arm`` and ``disarm`` thus wake no thread: two wake-ups a
    step made the thread take the interpreter's lock from the step between its round trips.

    Example::

        dog = Watchdog(lambda what: print("past the limit:", what))
        dog.arm(30.0, "lunora.tool[abc]")
        ...  # the task
        dog.disarm()
    """

    def __init__(
        self, expired: Callable[[str], None], *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._expired = expired
        self._clock = clock
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._what = ""
        self._looks_at: float | None = None  # when the thread next wakes by itself; None: never
        self._thread = threading.Thread(target=self._run, name="lunora-hard-limit", daemon=True)
        self._thread.start()

    def arm(self, seconds: float, what: str) -> None:
        """Call ``expired(what)`` ``seconds`` from now unless ``disarm`` comes first."""
        deadline = self._clock() + seconds
        with self._cond:
            self._deadline, self._what = deadline, what
            if self._looks_at is None or deadline < self._looks_at:
                self._cond.notify()

    def disarm(self) -> None:
        """The task ended: nothing to call (the thread finds no deadline when it next looks)."""
        with self._cond:
            self._deadline = None

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._deadline is None or self._clock() < self._deadline:
                    self._looks_at = self._deadline
                    self._cond.wait(None if self._deadline is None else self._deadline - self._clock())
                what, self._deadline, self._looks_at = self._what, None, None
            self._expired(what)


def restart_process(what: str) -> None:
    """Replace this worker process with a fresh one (the same command line and pid): ``what`` ran
    past its hard time limit and only the process's end stops it."""
    log.critical("lunora: %s ran past its hard time limit; replacing this solo worker process", what)
    ready = Settings().worker_ready_file
    if ready is not None:  # not ready until the new process consumes again
        ready.unlink(missing_ok=True)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        os.execv(sys.executable, sys.orig_argv)
    finally:  # the exec failed: end the process all the same, the supervisor starts another
        os._exit(EXEC_FAILED)


def _raise_soft_limit(signum: int, frame: FrameType | None) -> None:
    raise SoftTimeLimitExceeded()


class SoloTimeLimits(bootsteps.StartStopStep):  # type: ignore[misc]
    """Worker bootstep: on the solo pool, enforce each task's soft and hard time limits."""

    requires = {"celery.worker.components:Pool"}

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        # A class derived from the solo pool runs tasks in the process too (workers.pools accepts it).
        self.enabled = issubclass(get_implementation(worker.pool_cls), SoloPool)
        self._watchdog: Watchdog | None = None

    def start(self, worker: Any) -> None:
        """Install the soft limit's signal handler and arm / disarm around every task."""
        self._watchdog = Watchdog(restart_process)
        signal.signal(signal.SIGALRM, _raise_soft_limit)
        signals.task_prerun.connect(self._arm, weak=False)
        signals.task_postrun.connect(self._disarm, weak=False)

    def stop(self, worker: Any) -> None:
        """Stop limiting (the worker shuts down)."""
        signals.task_prerun.disconnect(self._arm)
        signals.task_postrun.disconnect(self._disarm)
        self._disarm()

    def _arm(self, task: Any = None, task_id: str | None = None, **_: Any) -> None:
        if task is None:
            return
        soft, hard = task_limits(task)
        if soft:
            signal.setitimer(signal.ITIMER_REAL, soft)
        if hard and self._watchdog is not None:
            self._watchdog.arm(hard, f"{task.name}[{task_id}]")

    def _disarm(self, **_: Any) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if self._watchdog is not None:
            self._watchdog.disarm()
