"""``app.threads``: owner-gated reads of a thread and its transcript.

An owned thread answers only to its owner; for anyone else (including an anonymous viewer) it is
indistinguishable from a thread that does not exist — the same ``NotFoundError``, the same message —
so guessing keys leaks nothing. A thread without an owner is readable by whoever knows its key.
``trusted=True`` skips the gate for server-side code that already checked access.
"""

from __future__ import annotations

from lunora_jobs.engine.prompt import order_history
from lunora_jobs.errors import NotFoundError
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import MessageRecord, ThreadRecord


class ThreadsAPI:
    """Example::

        app.threads.messages("t1", viewer="user-7")   # [MessageRecord(role="user", ...), ...]
        app.threads.get("t1", viewer="someone-else")  # NotFoundError: no thread 't1'
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
