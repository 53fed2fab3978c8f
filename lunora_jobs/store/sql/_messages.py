"""Messages over SQL: idempotent appends with a per-thread ``seq``, windows, fork and truncate.

``seq`` comes from the thread row's ``next_seq`` counter, bumped by the appending transaction
itself: the UPDATE row-locks the thread, so concurrent appenders (threads or processes, any
dialect) take turns and never hand out one ``seq`` twice. A replayed key is skipped by the unique
``(thread_id, key)`` index; the seq it reserved is left as a harmless gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from lunora_jobs.errors import ConflictError, NotFoundError
from lunora_jobs.store._codec import check_identity, load, new_id
from lunora_jobs.store._rules import unique_by_key
from lunora_jobs.store.records import MessageRecord, NewMessage, ThreadRecord
from lunora_jobs.store.schema import messages, threads, tool_calls
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._rows import message_record, message_rows, thread_record


class SqlMessagesMixin(SqlBase):
    """Message operations of ``SqlStore``."""

    def _append_in(
        self,
        conn: Connection,
        where: sa.ColumnElement[bool],
        batch: Sequence[NewMessage],
        now: int,
        sets: dict[str, Any] | None = None,
        adds: dict[str, int] | None = None,
    ) -> str | None:
        """Reserve seqs on the matched thread and insert ``batch`` there. Returns the thread id."""
        bumped = self._bump_thread(conn, where, len(batch), now, sets, adds)
        if bumped is None:
            return None
        thread_id, last = bumped
        if batch:
            rows = message_rows(thread_id, batch, last - len(batch) + 1, now)
            conn.execute(self._insert_ignore(messages, ["thread_id", "key"]), rows)
        return thread_id

    def append_message(self, thread_id: str, message: NewMessage) -> MessageRecord:
        """Append idempotently on ``message.key``; assigns the next per-thread ``seq``."""
        return self.append_messages(thread_id, [message])[0]

    def append_messages(self, thread_id: str, batch: Sequence[NewMessage]) -> list[MessageRecord]:
        """Append several in one transaction, in order, each idempotent on its key."""
        requested = [m.key for m in batch]
        unique = unique_by_key(batch)
        if not unique:
            return []
        now = self.clock()

        def work(conn: Connection) -> list[MessageRecord]:
            if self._append_in(conn, threads.c.id == thread_id, unique, now) is None:
                raise NotFoundError(f"no thread {thread_id!r}; create it with ensure_thread first")
            query = sa.select(messages).where(
                messages.c.thread_id == thread_id, messages.c.key.in_(requested)
            )
            found = {r.key: r for r in map(message_record, conn.execute(query))}
            return [found[key] for key in requested]

        return self._write(work)

    def list_messages(self, thread_id: str) -> list[MessageRecord]:
        """The whole transcript ordered by ``seq``."""
        return self.load_thread_for_turn(thread_id)

    def load_thread_for_turn(self, thread_id: str, message_limit: int | None = None) -> list[MessageRecord]:
        """The newest ``message_limit`` messages (all when None), oldest first; ordered in the database."""
        query = sa.select(messages).where(messages.c.thread_id == thread_id)
        if message_limit is None:
            query = query.order_by(messages.c.seq)
        else:
            query = query.order_by(messages.c.seq.desc()).limit(max(0, message_limit))
        rows = self._query(lambda conn: [message_record(r) for r in conn.execute(query)])
        return rows if message_limit is None else rows[::-1]

    def has_assistant_message(self, thread_id: str) -> bool:
        """Whether any assistant message exists on the thread (one-row existence check)."""
        query = (
            sa.select(sa.literal(1))
            .where(messages.c.thread_id == thread_id, messages.c.role == "assistant")
            .limit(1)
        )
        with self._read() as conn:
            return conn.execute(query).first() is not None

    def fork_thread(
        self, thread_id: str, new_key: str, *, upto_seq: int | None = None, owner: str | None = None
    ) -> ThreadRecord:
        """Copy messages (``seq <= upto_seq``, or all) under fresh ids to a new thread. One transaction.

        The fork keeps the source's seqs, title, model, agent and state; ``owner`` defaults to the
        source's owner.
        """
        check_identity("thread key", new_key)
        check_identity("owner", owner)
        now = self.clock()

        def work(conn: Connection) -> ThreadRecord:
            src = conn.execute(sa.select(threads).where(threads.c.id == thread_id)).first()
            if src is None:
                raise NotFoundError(f"no thread {thread_id!r} to fork")
            query = sa.select(messages).where(messages.c.thread_id == thread_id).order_by(messages.c.seq)
            if upto_seq is not None:
                query = query.where(messages.c.seq <= upto_seq)
            kept = list(conn.execute(query))
            new_thread_id = new_id()
            s = src._mapping
            conn.execute(
                sa.insert(threads).values(
                    id=new_thread_id,
                    key=new_key,
                    owner=owner if owner is not None else s["owner"],
                    title=s["title"],
                    status="idle",
                    state=s["state"],
                    model=s["model"],
                    agent=s["agent"],
                    active_run_id=None,
                    input_tokens=0,
                    output_tokens=0,
                    next_seq=max((int(r.seq) for r in kept), default=0),
                    created_at=now,
                    updated_at=now,
                )
            )
            if kept:
                rows = [
                    {**r._mapping, "id": new_id(), "thread_id": new_thread_id, "created_at": now}
                    for r in kept
                ]
                conn.execute(sa.insert(messages).values(rows))
            return thread_record(conn.execute(sa.select(threads).where(threads.c.id == new_thread_id)).one())

        try:
            return self._write(work)
        except IntegrityError as exc:
            raise ConflictError(f"thread key {new_key!r} is taken; fork under a new key") from exc

    def truncate_from(self, thread_id: str, seq: int) -> int:
        """Delete messages with ``seq >= seq`` and their tool calls. One transaction. Returns count.

        Tool calls are deleted explicitly (not only by cascade): those answered by a doomed tool
        message and those requested by a doomed assistant message.
        """

        def work(conn: Connection) -> int:
            doomed_where = sa.and_(messages.c.thread_id == thread_id, messages.c.seq >= seq)
            doomed = list(
                conn.execute(sa.select(messages.c.tool_call_id, messages.c.tool_calls).where(doomed_where))
            )
            call_ids: set[str] = set()
            for row in doomed:
                if row.tool_call_id:
                    call_ids.add(row.tool_call_id)
                for call in load(row.tool_calls) or []:
                    if isinstance(call, dict) and call.get("id"):
                        call_ids.add(str(call["id"]))
            if call_ids:
                conn.execute(
                    sa.delete(tool_calls).where(
                        tool_calls.c.thread_id == thread_id, tool_calls.c.id.in_(call_ids)
                    )
                )
            return int(conn.execute(sa.delete(messages).where(doomed_where)).rowcount)

        return self._write(work)
