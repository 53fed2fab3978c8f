"""``app.runs``: operations on a run by its id, owner-gated like ``app.threads``.

An owned run answers only to its owner; for anyone else it is indistinguishable from a run that does
not exist (the same ``NotFoundError``). ``trusted=True`` skips the gate for server-side code that
already checked access (the CLI, an admin identity in the API).
"""

from __future__ import annotations

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.resume import retry_failed
from lunora_jobs.errors import NotFoundError
from lunora_jobs.store.records import RunRecord


class RunsAPI:
    """Example::

        app.runs.retry(run_id, viewer="user-7")   # a failed run resumes from its failed step
    """

    def __init__(self, deps: EngineDeps) -> None:
        self._deps = deps

    def get(self, run_id: str, viewer: str | None = None, *, trusted: bool = False) -> RunRecord:
        """The run record; ``NotFoundError`` when there is none or ``viewer`` may not see it."""
        run = self._deps.store.get_run(run_id)
        if run is None or (not trusted and run.owner is not None and run.owner != viewer):
            raise NotFoundError(f"no run {run_id!r}")
        return run

    def retry(self, run_id: str, viewer: str | None = None, *, trusted: bool = False) -> list[str]:
        """Resume a failed run from the step it failed at: completed steps stay memoized (not run
        again), the failed step gets fresh attempts, the run is ``running`` again and dispatched.
        Returns the steps given fresh attempts. ``RunNotFailedError`` when the run is not failed,
        ``ConflictError`` when its thread has another run in flight, ``NotFoundError`` for an unknown
        run (or one ``viewer`` may not see)."""
        self.get(run_id, viewer, trusted=trusted)  # the owner gate first
        return retry_failed(self._deps, run_id)
