"""``app.threads``: owner-gated reads of a thread and its transcript.

An owned thread answers only to its owner; for anyone else (including an anonymous viewer) it is
indistinguishable from a thread that does not exist — the same ``NotFoundError``, the same message —
so guessing keys leaks nothing. A thread without an owner is readable by whoever knows its key.
``trusted=True`` skips the gate for server-side code that already checked access.
"""

from __future__ import annotations

from lunora_jobs.engine.prompt import order_history
from lunora_jobs.errors import ConflictError, NotFoundError
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import MessageRecord, ThreadRecord


class ThreadsAPI:
    """Example::

        app.threads.messages("t1", viewer="user-7")   # [MessageRecord(role="user", ...), ...]
        app.threads.get("t1", viewer="someone-else")  # NotFoundError: no thread 't1'
        app.threads.erase("t1", viewer="user-7")      # {"agent_messages": 4, "agent_runs": 1, ...}
    """

    def __init__(self, store: AgentStore) -> None:
        self._store = store

    def get(self, key: str, viewer: str | None = None, *, trusted: bool = False) -> ThreadRecord:
        """The thread record (status, state, usage totals, active run)."""
        thread = self._store.get_thread(key)
        if thread is None or (not trusted and thread.owner is not None and thread.owner != viewer):
            raise NotFoundError(f"no thread {key!r}")
        return thread

    def messages(self, key: str, viewer: str | None = None, *, trusted: bool = False) -> list[MessageRecord]:
        """The transcript, oldest first; parallel tool results in call order after their assistant turn."""
        thread = self.get(key, viewer, trusted=trusted)
        return order_history(self._store.list_messages(thread.id))

    def state(self, key: str, viewer: str | None = None, *, trusted: bool = False) -> object:
        """The thread's synced state."""
        return self.get(key, viewer, trusted=trusted).state

    def erase(self, key: str, viewer: str | None = None, *, trusted: bool = False) -> dict[str, int]:
        """Delete the thread and every row of it in every agent table; rows deleted per table.

        Refused (``ConflictError``) while a run of the thread is active or queued: cancel it first,
        so no worker writes into a thread being erased. Owner-scoped graph memory (entities, edges)
        is the owner's, not the thread's, and stays; episodes are per run and go.
        """
        thread = self.get(key, viewer, trusted=trusted)
        busy = thread.active_run_id or next(iter(self._store.queued_runs(thread.id, limit=1)), None)
        if busy:
            raise ConflictError(
                f"thread {key!r} has an open run {busy!r}; cancel it first (`lunora runs cancel {busy}`)"
            )
        counts = self._store.erase_thread(key)
        if counts is None:
            raise NotFoundError(f"no thread {key!r}")
        return counts
