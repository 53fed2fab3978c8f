"""Step leases kept alive while the step runs: a killed worker's step is taken over in seconds.

A claim holds its step for a short lease (``EngineDeps.lease_ms``: ``LUNORA_LEASE_S``, default 6 s,
never longer than the agent's ``step_timeout_s`` + margin). A step that finishes within a third of
its lease — most steps — never touches the lease again: the hot path costs one dict insert and one
removal here, no round trip. A step still running then is renewed by this process's keeper thread
(``store.renew_lease``, fenced by the claim's generation) every third of its lease, for as long as
it runs. So:

- a SIGKILLed worker (or pool process) stops renewing; its steps' leases expire within one lease,
  and the sweep, which dispatches an expired lease at once, has another worker take them over;
- a slow but live step keeps renewing and is never run twice at once, whatever its length (its
  time limit, not the lease, bounds it).

The keeper also remembers the generations whose attempt ended in this process without recording a
result (the work raised out of the pipeline, e.g. the database went away mid-write): a redelivery
of that step here re-claims it at once (``store.reclaim_step``) instead of answering ``busy`` to
its own dead attempt.

The keeper is fork-aware: a process forked from one that used it (Celery's prefork pool) starts
with an empty keeper and its own thread.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

Renew = Callable[[str, str, int, int], bool]
"""``renew(run_id, step, generation, lease_ms)``: extend the lease; False when fenced out."""

RENEW_FRACTION = 3
"""A held lease is renewed once a third of it has passed (so two renewals may fail before it lapses)."""
MAX_ENDED = 1024
"""How many ended attempts a process remembers (a retry comes seconds later, not hours)."""


@dataclass(slots=True)
class _Held:
    generation: int
    lease_ms: int
    due: float
    """Monotonic time of the next renewal."""


class LeaseKeeper:
    """Renews the leases of the steps this process runs, from one daemon thread.

    Example::

        keeper = LeaseKeeper(store.renew_lease)
        keeper.hold(run_id, "tool:search:c1", generation=1, lease_ms=6000)
        ...  # the step's work; renewed every 2 s if it takes longer than 2 s
        keeper.release(run_id, "tool:search:c1", ended=False)
    """

    def __init__(self, renew: Renew, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._renew = renew
        self._clock = clock
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._held: dict[tuple[str, str], _Held] = {}
        self._ended: dict[tuple[str, str], int] = {}
        self._thread: threading.Thread | None = None
        self._wake_at = float("inf")

    def _same_process(self) -> None:
        if os.getpid() != self._pid:  # forked: the parent's thread and entries do not exist here
            self._reset()

    def hold(self, run_id: str, step: str, generation: int, lease_ms: int) -> None:
        """Keep the lease of ``generation`` alive until ``release``."""
        self._same_process()
        due = self._clock() + lease_ms / 1000 / RENEW_FRACTION
        with self._cond:
            self._held[(run_id, step)] = _Held(generation, lease_ms, due)
            self._ended.pop((run_id, step), None)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lunora-leases", daemon=True)
                self._thread.start()
            elif due < self._wake_at:
                self._cond.notify()

    def release(self, run_id: str, step: str, *, ended: bool) -> None:
        """Stop renewing. ``ended``: the attempt ended without recording its result (it raised), so
        a redelivery in this process may re-claim its lease at once (``ended_generation``)."""
        self._same_process()
        with self._cond:
            held = self._held.pop((run_id, step), None)
            if ended and held is not None:
                if len(self._ended) >= MAX_ENDED:
                    self._ended.pop(next(iter(self._ended)))
                self._ended[(run_id, step)] = held.generation

    def ended_generation(self, run_id: str, step: str) -> int | None:
        """The generation of this process's attempt at ``step`` that ended unrecorded, if any."""
        self._same_process()
        with self._cond:
            if (run_id, step) in self._held:
                return None  # still running here: its lease is alive
            return self._ended.get((run_id, step))

    def holding(self) -> int:
        """How many leases this process keeps alive now."""
        with self._cond:
            return len(self._held)

    def _run(self) -> None:
        while True:
            with self._cond:
                now = self._clock()
                due = [(key, held) for key, held in self._held.items() if held.due <= now]
                later = [held.due for held in self._held.values() if held.due > now]
                if not due:
                    self._wake_at = min(later, default=float("inf"))
                    timeout = None if not later else self._wake_at - now
                    self._cond.wait(timeout)
                    continue
                for _, held in due:  # the next renewal is due a third of a lease from now
                    held.due = now + held.lease_ms / 1000 / RENEW_FRACTION
            for (run_id, step), held in due:
                self._renew_one(run_id, step, held)

    def _renew_one(self, run_id: str, step: str, held: _Held) -> None:
        try:
            alive = self._renew(run_id, step, held.generation, held.lease_ms)
        except Exception as exc:  # the database is away: try again at the next renewal
            log.warning("lunora: could not renew the lease of step %s of run %s: %s", step, run_id, exc)
            return
        if not alive:  # completed meanwhile, or taken over: nothing of ours to keep alive
            with self._cond:
                current = self._held.get((run_id, step))
                if current is held:
                    del self._held[(run_id, step)]
