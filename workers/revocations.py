"""Keep the worker's memory of cancelled runs bounded.

``CeleryDispatcher.revoke(run_id)`` broadcasts "drop every task stamped ``lunora_run=<run_id>``".
Celery keeps those stamps in a plain list in the worker's main process and scans it for each task
it receives, so it would grow with every cancellation for the life of the worker. Forgetting old
entries is safe: revocation only spares a wake-up — the engine refuses any step of a cancelled run
after one read of the run row. This bootstep trims the list to the newest ``MAX_REVOKED_RUNS`` on a
timer of the worker's event loop.
"""

from __future__ import annotations

from typing import Any

from celery import bootsteps

RUN_STAMP = "lunora_run"
"""The stamped header carrying the run id (set by ``CeleryDispatcher``), so ``revoke(run_id)`` can
find a run's queued tasks."""
MAX_REVOKED_RUNS = 1000
PRUNE_INTERVAL_S = 30.0


def prune_run_revocations(keep: int = MAX_REVOKED_RUNS) -> int:
    """Forget all but the newest ``keep`` revoked run ids; return how many were dropped."""
    from celery.worker import state

    revoked = state.revoked_stamps.get(RUN_STAMP)
    if not isinstance(revoked, list) or len(revoked) <= keep:
        return 0
    state.revoked_stamps[RUN_STAMP] = revoked[-keep:]
    return len(revoked) - keep


class PruneRunRevocations(bootsteps.StartStopStep):  # type: ignore[misc]
    """Worker bootstep: call :func:`prune_run_revocations` every ``PRUNE_INTERVAL_S`` seconds."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.tref: Any = None

    def start(self, worker: Any) -> None:
        """Arm the timer."""
        self.tref = worker.timer.call_repeatedly(PRUNE_INTERVAL_S, prune_run_revocations)

    def stop(self, worker: Any) -> None:
        """Disarm the timer."""
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None
