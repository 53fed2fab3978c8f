"""``InMemoryStore``: a single-process, non-durable twin of ``SqlStore`` for tests and scratch apps.

It implements the same ``AgentStore`` protocol and passes the same contract suite. One lock guards
everything, so a whole operation is atomic like a transaction; values are JSON round-tripped on
the way in and out, so a caller mutating a dict it passed in or got back changes nothing stored.

Example::

    from lunora_jobs.store import InMemoryStore
    store = InMemoryStore(clock=lambda: 1_700_000_000_000)
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from lunora_jobs.errors import ConflictError, NotFoundError
from lunora_jobs.store._codec import (
    THREAD_ADD,
    THREAD_SET,
    Clock,
    check_identity,
    dump,
    load,
    new_id,
    split_patch,
    wall_clock,
)
from lunora_jobs.store._rules import owner_conflict, unique_by_key
from lunora_jobs.store.memory._console import MemoryConsoleMixin
from lunora_jobs.store.memory._declarations import MemoryDeclarationsMixin
from lunora_jobs.store.memory._governance import MemoryGovernanceMixin
from lunora_jobs.store.memory._ledger import MemoryLedgerMixin
from lunora_jobs.store.memory._outbox import MemoryOutboxMixin
from lunora_jobs.store.memory._pricing import MemoryPricingMixin
from lunora_jobs.store.memory._proposals import InMemoryProposalStore
from lunora_jobs.store.memory._retention import MemoryRetentionMixin
from lunora_jobs.store.memory._run_queue import MemoryRunQueueMixin
from lunora_jobs.store.memory._run_status import MemoryRunStatusMixin
from lunora_jobs.store.memory._schedules import MemorySchedulesMixin
from lunora_jobs.store.memory._sweep import MemorySweepMixin
from lunora_jobs.store.memory._tool_calls import MemoryToolCallsMixin
from lunora_jobs.store.records import (
    JSON,
    MessageRecord,
    NewMessage,
    RunRecord,
    ScheduleRecord,
    StepRecord,
    ThreadRecord,
)


def copy(value: Any) -> Any:
    """A deep copy through JSON, the way a SQL column would hand it back."""
    return load(dump(value))


class InMemoryStore(
    MemoryLedgerMixin, MemoryToolCallsMixin, MemorySchedulesMixin, MemoryRunQueueMixin, MemoryPricingMixin,
    InMemoryProposalStore, MemoryConsoleMixin, MemorySweepMixin, MemoryRetentionMixin,
    MemoryGovernanceMixin, MemoryRunStatusMixin, MemoryOutboxMixin, MemoryDeclarationsMixin,
):
    """The ``AgentStore`` in process memory. ``clock`` returns epoch-ms (defaults to the wall clock)."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or wall_clock
        self._lock = threading.RLock()
        self._threads: dict[str, ThreadRecord] = {}
        self._next_seq: dict[str, int] = {}
        self._messages: dict[str, list[MessageRecord]] = {}
        self._runs: dict[str, RunRecord] = {}
        self._steps: dict[tuple[str, str], StepRecord] = {}
        self._tool_calls: dict[tuple[str, str], dict[str, Any]] = {}
        self._schedules: dict[str, ScheduleRecord] = {}
        self._init_ledger()
        self._init_declarations()
        self._init_run_queue()
        self._init_pricing()

    def ensure_tables(self) -> None:
        """Nothing to create in memory."""

    # -- threads ----------------------------------------------------------------------------
    def ensure_thread(
        self,
        key: str,
        *,
        owner: str | None = None,
        title: str | None = None,
        agent: str | None = None,
        model: str | None = None,
        initial_state: JSON = None,
    ) -> ThreadRecord:
        """Get the thread for ``key`` or create it; a different ``owner`` raises ``ConflictError``."""
        for field, value in (("thread key", key), ("owner", owner), ("agent", agent), ("model", model)):
            check_identity(field, value)
        with self._lock:
            found = self.get_thread(key)
            if found is None:
                now = self.clock()
                found = ThreadRecord(
                    new_id(),
                    key,
                    owner,
                    title,
                    "idle",
                    copy(initial_state),
                    model,
                    agent,
                    None,
                    0,
                    0,
                    now,
                    now,
                )
                self._threads[found.id] = found
                self._next_seq[found.id] = 0
                self._messages[found.id] = []
        owner_conflict(found, owner)
        return found

    def get_thread(self, key: str) -> ThreadRecord | None:
        """The thread for ``key``, or None."""
        check_identity("thread key", key)
        with self._lock:
            return next((t for t in self._threads.values() if t.key == key), None)

    def get_thread_by_id(self, thread_id: str) -> ThreadRecord | None:
        """The thread with this id, or None."""
        with self._lock:
            return self._threads.get(thread_id)

    def list_threads(self, *, owner: str | None = None, limit: int = 100) -> list[ThreadRecord]:
        """Threads, most recently active first, optionally only ``owner``'s."""
        with self._lock:
            found = [t for t in self._threads.values() if owner is None or t.owner == owner]
        return sorted(found, key=lambda t: (-t.updated_at, t.id))[:limit]

    def _thread(self, thread_id: str) -> ThreadRecord:
        thread = self._threads.get(thread_id)
        if thread is None:
            raise NotFoundError(f"no thread {thread_id!r}; create it with ensure_thread first")
        return thread

    def _patch_thread(self, thread_id: str, fields: dict[str, Any], now: int) -> None:
        sets, adds = split_patch(fields, THREAD_SET, THREAD_ADD, "thread")
        for name in ("model", "agent"):
            check_identity(name, sets.get(name))
        thread = self._thread(thread_id)
        changes: dict[str, Any] = {k: copy(v) for k, v in sets.items()}
        for column, amount in adds.items():
            changes[column] = getattr(thread, column) + amount
        self._threads[thread_id] = replace(thread, **changes, updated_at=now)

    def patch_thread(self, thread_id: str, **fields: Any) -> None:
        """Update any of: status, title, state, model, agent, active_run_id (and ``add_*_tokens``)."""
        with self._lock:
            self._patch_thread(thread_id, fields, self.clock())

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread with its messages, tool calls, usage, runs and steps."""
        with self._lock:
            self._threads.pop(thread_id, None)
            self._messages.pop(thread_id, None)
            self._next_seq.pop(thread_id, None)
            doomed = {r.id for r in self._runs.values() if r.thread_id == thread_id}
            self._runs = {k: r for k, r in self._runs.items() if k not in doomed}
            self._steps = {k: s for k, s in self._steps.items() if k[0] not in doomed}
            self._outbox = {k: e for k, e in self._outbox.items() if k[0] not in doomed}
            self._tool_calls = {k: c for k, c in self._tool_calls.items() if c["thread_id"] != thread_id}
            self._queue = [(t, r) for t, r in self._queue if t != thread_id]
            self._usage = [u for u in self._usage if u.thread_id != thread_id]
            self._delete_thread_proposals(thread_id)

    def model_for_thread(self, thread_id: str) -> str | None:
        """The model pinned on the thread."""
        with self._lock:
            thread = self._threads.get(thread_id)
            return None if thread is None else thread.model

    def acquire_thread(self, thread_id: str, run_id: str) -> bool:
        """Make ``run_id`` the thread's active run if none is (or it already is)."""
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None or thread.active_run_id not in (None, run_id):
                return False
            self._threads[thread_id] = replace(thread, active_run_id=run_id, updated_at=self.clock())
            return True

    def release_thread(self, thread_id: str, run_id: str) -> bool:
        """Clear the active run if it is ``run_id``."""
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None or thread.active_run_id != run_id:
                return False
            self._threads[thread_id] = replace(thread, active_run_id=None, updated_at=self.clock())
            return True

    # -- messages ---------------------------------------------------------------------------
    def _append(self, thread_id: str, batch: Sequence[NewMessage], now: int) -> None:
        thread = self._thread(thread_id)
        log = self._messages[thread_id]
        present = {m.key for m in log}
        seq = self._next_seq[thread_id]
        for m in unique_by_key(batch):
            seq += 1  # reserved even for a replayed key, as the SQL store does
            if m.key in present:
                continue
            log.append(
                MessageRecord(
                    new_id(),
                    thread_id,
                    m.key,
                    m.role,
                    m.content,
                    m.run_id,
                    copy(m.tool_calls),
                    m.tool_call_id,
                    m.name,
                    copy(m.metadata),
                    seq,
                    now,
                )
            )
        self._next_seq[thread_id] = seq
        self._threads[thread_id] = replace(thread, updated_at=now)

    def append_message(self, thread_id: str, message: NewMessage) -> MessageRecord:
        """Append idempotently on ``message.key``; assigns the next per-thread ``seq``."""
        return self.append_messages(thread_id, [message])[0]

    def append_messages(self, thread_id: str, messages: Sequence[NewMessage]) -> list[MessageRecord]:
        """Append several atomically, in order, each idempotent on its key."""
        with self._lock:
            self._append(thread_id, messages, self.clock())
            by_key = {m.key: m for m in self._messages[thread_id]}
            return [by_key[m.key] for m in messages]

    def list_messages(self, thread_id: str) -> list[MessageRecord]:
        """The whole transcript ordered by ``seq``."""
        return self.load_thread_for_turn(thread_id)

    def load_thread_for_turn(self, thread_id: str, message_limit: int | None = None) -> list[MessageRecord]:
        """The newest ``message_limit`` messages (all when None), oldest first."""
        with self._lock:
            log = sorted(self._messages.get(thread_id, []), key=lambda m: m.seq)
        if message_limit is None:
            return log
        return log[len(log) - max(0, message_limit) :] if message_limit > 0 else []

    def has_assistant_message(self, thread_id: str) -> bool:
        """Whether any assistant message exists on the thread."""
        with self._lock:
            return any(m.role == "assistant" for m in self._messages.get(thread_id, []))

    def fork_thread(
        self, thread_id: str, new_key: str, *, upto_seq: int | None = None, owner: str | None = None
    ) -> ThreadRecord:
        """Copy messages (``seq <= upto_seq``, or all) under fresh ids to a new thread."""
        check_identity("thread key", new_key)
        check_identity("owner", owner)
        with self._lock:
            src = self._thread(thread_id)
            if self.get_thread(new_key) is not None:
                raise ConflictError(f"thread key {new_key!r} is taken; fork under a new key")
            now = self.clock()
            kept = [m for m in self._messages[thread_id] if upto_seq is None or m.seq <= upto_seq]
            fork = ThreadRecord(
                new_id(),
                new_key,
                owner if owner is not None else src.owner,
                src.title,
                "idle",
                copy(src.state),
                src.model,
                src.agent,
                None,
                0,
                0,
                now,
                now,
            )
            self._threads[fork.id] = fork
            self._messages[fork.id] = [
                replace(m, id=new_id(), thread_id=fork.id, created_at=now) for m in kept
            ]
            self._next_seq[fork.id] = max((m.seq for m in kept), default=0)
            return fork

    def truncate_from(self, thread_id: str, seq: int) -> int:
        """Delete messages with ``seq >= seq`` and their tool calls. Returns count."""
        with self._lock:
            log = self._messages.get(thread_id, [])
            doomed = [m for m in log if m.seq >= seq]
            ids = {m.tool_call_id for m in doomed if m.tool_call_id}
            ids |= {
                str(c["id"])
                for m in doomed
                for c in (m.tool_calls or [])
                if isinstance(c, dict) and c.get("id")
            }
            self._tool_calls = {
                k: c for k, c in self._tool_calls.items() if not (c["thread_id"] == thread_id and k[1] in ids)
            }
            self._messages[thread_id] = [m for m in log if m.seq < seq]
            return len(doomed)
