"""``app.approvals``: list and resolve the tool calls a run is waiting on (owner-gated like threads)."""

from __future__ import annotations

from lunora_jobs.engine.approvals import PendingApproval, pending_approvals, send_event
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.errors import NotFoundError
from lunora_jobs.runtime.threads_api import ThreadsAPI
from lunora_jobs.store.records import RunRecord


class ApprovalsAPI:
    """Example::

        app.approvals.pending("t1", viewer="user-7")     # [PendingApproval(tool_call_id="call_1", ...)]
        app.approvals.resolve("t1", "call_1", approve=True, viewer="user-7")
    """

    def __init__(self, deps: EngineDeps, threads: ThreadsAPI) -> None:
        self._deps = deps
        self._threads = threads

    def pending(
        self, thread_key: str, viewer: str | None = None, *, trusted: bool = False
    ) -> list[PendingApproval]:
        """The calls the thread's active run waits on (empty when nothing waits)."""
        run = self._active_run(thread_key, viewer, trusted)
        return [] if run is None else pending_approvals(self._deps, run)

    def resolve(
        self, thread_key: str, tool_call_id: str, *, approve: bool, viewer: str | None = None,
        reason: str | None = None, trusted: bool = False,
    ) -> str:
        """Approve (the tool runs as normal) or reject (the model is told, and recovers).

        Returns ``"applied"``, or ``"unchanged"`` when the same decision was already recorded;
        raises ``ConflictError`` for a contradicting decision and ``NotFoundError`` when there is no
        such pending call (or the viewer may not see the thread).
        """
        thread = self._threads.get(thread_key, viewer, trusted=trusted)  # the owner gate first
        store = self._deps.store
        candidates = [thread.active_run_id] if thread.active_run_id else []
        candidates += [r.id for r in reversed(store.list_runs(thread_id=thread.id))]
        run_id = next((r for r in candidates if store.get_tool_call(r, tool_call_id) is not None),
                      thread.active_run_id)
        if run_id is None:
            raise NotFoundError(f"no pending approval {tool_call_id!r} on thread {thread_key!r}")
        event = {"type": "approval", "call_id": tool_call_id, "approved": approve, "by": viewer,
                 "reason": reason}
        return send_event(self._deps, run_id, event)

    def _active_run(self, thread_key: str, viewer: str | None, trusted: bool) -> RunRecord | None:
        thread = self._threads.get(thread_key, viewer, trusted=trusted)
        if thread.active_run_id is None:
            return None
        return self._deps.store.get_run(thread.active_run_id)
