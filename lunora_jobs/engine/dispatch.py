"""How the engine asks for a step to run: the ``Dispatcher`` seam and the in-process dispatcher.

The engine never imports Celery. ``workers.dispatch.CeleryDispatcher`` is the production
implementation; ``InProcessDispatcher`` serves the embedded default and tests. A task carries only
``(run_id, step)``: everything else is read from the database, so a redelivered or duplicated message
is harmless (the ledger decides what runs).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from lunora_jobs.engine.events import RedisPublish

TaskRoute = str
"""Which task runs a step: ``turn`` and ``tool`` have Celery tasks of their own, every other route
(``memory``, ``step``, ...) goes to the generic one. Each step kind names its route."""


@dataclass(frozen=True, slots=True)
class StepTask:
    """A request to run step ``step`` of run ``run_id``. ``kind`` picks the Celery task / queue."""

    run_id: str
    step: str
    kind: TaskRoute = "turn"
    delay_s: float = 0.0
    """Run it no sooner than this (a failed attempt's backoff, ``engine/backoff.py``). The ledger
    holds the step until then, and the sweep dispatches it once due if this message is lost."""

    @property
    def task_id(self) -> str:
        """A deterministic id: the broker can dedupe and ``revoke`` can find it."""
        return f"{self.run_id}:{self.step}"


@runtime_checkable
class Dispatcher(Protocol):
    """Enqueues step tasks. Implementations must not run the step inside ``dispatch``'s caller stack
    unless they drain iteratively (see ``InProcessDispatcher``)."""

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        """Enqueue ``tasks`` (several tool calls of one turn fan out in one call)."""
        ...

    def revoke(self, run_id: str) -> None:
        """Best-effort: drop queued tasks of ``run_id`` (cancellation). The ledger stays the authority."""
        ...


@runtime_checkable
class PublishCarrier(Protocol):
    """A ``Dispatcher`` that can send an event bus's prepared PUBLISH in its enqueue's round trip
    (``workers.dispatch.CeleryDispatcher`` on a Redis broker): a step's live notice then costs no
    round trip of its own (``engine/notices.py``)."""

    def dispatch_and_publish(self, tasks: Sequence[StepTask], publish: RedisPublish) -> bool:
        """Enqueue ``tasks``, then ``publish`` in the same round trip when it is for the broker's own
        Redis server: True when it went out, False when the caller is to send it."""
        ...


def runs_inline(dispatcher: Dispatcher) -> bool:
    """Whether ``dispatch`` runs the steps in its caller (``runs_inline = True`` on the class, like
    ``InProcessDispatcher``): no broker can lose such a dispatch, so a start keeps no outbox row for it,
    and an error its steps raise reaches the caller."""
    return bool(getattr(dispatcher, "runs_inline", False))


class InProcessDispatcher:
    """Runs dispatched steps inline by draining a local queue in a loop.

    No recursion: a step that dispatches its successor while the queue is being drained only
    appends to the queue, so a 1,000-step run does not grow the stack.

    Example::

        dispatcher = InProcessDispatcher(lambda task: engine.execute(task.run_id, task.step))
    """

    runs_inline = True

    def __init__(
        self, runner: Callable[[StepTask], None] | None = None, *, history: int = 1000,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._runner = runner
        self._sleep = sleep
        self._queue: deque[StepTask] = deque()
        self._draining = False
        self.dispatched: deque[StepTask] = deque(maxlen=history)
        """The last ``history`` tasks dispatched, in order (the harness exposes them); older ones
        are forgotten, so a long-lived embedded app does not grow with every step it ever ran."""

    def bind(self, runner: Callable[[StepTask], None]) -> None:
        """Set the function that runs one step (the app binds itself after construction)."""
        self._runner = runner

    @property
    def bound(self) -> bool:
        """Whether a runner is set."""
        return self._runner is not None

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        """Queue the tasks and, unless already draining, drain until the queue is empty."""
        self._queue.extend(tasks)
        self.dispatched.extend(tasks)
        if self._draining:
            return
        if self._runner is None:
            raise RuntimeError("InProcessDispatcher has no runner: call bind() first")
        self._draining = True
        try:
            while self._queue:
                task = self._queue.popleft()
                if task.delay_s > 0:  # a retry's backoff: the embedded app waits it out inline
                    self._sleep(task.delay_s)
                self._runner(task)
        finally:
            self._draining = False

    def revoke(self, run_id: str) -> None:
        """Drop queued tasks of ``run_id``."""
        self._queue = deque(t for t in self._queue if t.run_id != run_id)
