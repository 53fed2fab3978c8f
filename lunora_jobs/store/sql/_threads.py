"""Threads over SQL: get-or-create by key with an immutable owner, patches, the active-run slot."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store._codec import (
    THREAD_ADD,
    THREAD_JSON,
    THREAD_SET,
    check_identity,
    dump,
    new_id,
    split_patch,
)
from lunora_jobs.store._rules import owner_conflict
from lunora_jobs.store.records import JSON, ThreadRecord
from lunora_jobs.store.schema import threads
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._postgres.pipeline import Record
from lunora_jobs.store.sql._postgres.statements import ACQUIRE_THREAD_SQL, ENSURE_THREAD_SQL
from lunora_jobs.store.sql._rows import thread_record


def new_thread_row(
    key: str, owner: str | None, title: str | None, agent: str | None, model: str | None,
    initial_state: JSON, now: int,
) -> dict[str, Any]:
    """Every ``agent_threads`` column of a new, idle thread (a fresh id)."""
    return {
        "id": new_id(),
        "key": key,
        "owner": owner,
        "title": title,
        "status": "idle",
        "state": dump(initial_state),
        "model": model,
        "agent": agent,
        "active_run_id": None,
        "input_tokens": 0,
        "output_tokens": 0,
        "next_seq": 0,
        "created_at": now,
        "updated_at": now,
    }


class SqlThreadsMixin(SqlBase):
    """Thread operations of ``SqlStore``."""

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
        """Get the thread for ``key`` or create it; a different ``owner`` raises ``ConflictError``.

        ``owner=None`` skips the owner check (trusted, system-side access).
        """
        check_identity("thread key", key)
        check_identity("owner", owner)
        check_identity("agent", agent)
        check_identity("model", model)
        row = new_thread_row(key, owner, title, agent, model, initial_state, self.clock())
        if self.dialect == "postgresql":  # get-or-create in one statement
            created = self._pipeline([(ENSURE_THREAD_SQL, row)])[0]
            found = thread_record(Record(created[0])) if created else None
        else:
            found = self.get_thread(key)
            if found is None:
                found = self._write(lambda conn: self._insert_thread(conn, row), autocommit=True)
        if found is None:  # created meanwhile by another start (or no RETURNING here)
            found = self.get_thread(key)
        if found is None:  # pragma: no cover - only if deleted between the two statements
            raise NotFoundError(f"thread {key!r} vanished while being created; retry")
        owner_conflict(found, owner)
        return found

    def _insert_thread(self, conn: Connection, row: dict[str, Any]) -> ThreadRecord | None:
        """Insert ``row`` unless its key exists; the new thread where the dialect returns it."""
        stmt = self._insert_ignore(threads, ["key"])
        if not self._inserts_returning():
            conn.execute(stmt, row)
            return None
        created = conn.execute(stmt.returning(*threads.c), row).first()
        return None if created is None else thread_record(created)

    def _thread_where(self, where: sa.ColumnElement[bool]) -> ThreadRecord | None:
        with self._read() as conn:
            row = conn.execute(sa.select(threads).where(where)).first()
        return None if row is None else thread_record(row)

    def get_thread(self, key: str) -> ThreadRecord | None:
        """The thread for ``key``, or None."""
        check_identity("thread key", key)
        return self._thread_where(threads.c.key == key)

    def get_thread_by_id(self, thread_id: str) -> ThreadRecord | None:
        """The thread with this id, or None."""
        return self._thread_where(threads.c.id == thread_id)

    def list_threads(self, *, owner: str | None = None, limit: int = 100) -> list[ThreadRecord]:
        """Threads, most recently active first, optionally only ``owner``'s."""
        check_identity("owner", owner)
        query = sa.select(threads).order_by(threads.c.updated_at.desc(), threads.c.id).limit(limit)
        if owner is not None:
            query = query.where(threads.c.owner == owner)
        with self._read() as conn:
            return [thread_record(row) for row in conn.execute(query)]

    def patch_thread(self, thread_id: str, **fields: Any) -> None:
        """Update any of: status, title, state, model, agent, active_run_id (and ``add_*_tokens``)."""
        sets, adds = split_patch(fields, THREAD_SET, THREAD_ADD, "thread")
        for name in ("model", "agent"):
            check_identity(name, sets.get(name))
        sets = {k: dump(v) if k in THREAD_JSON else v for k, v in sets.items()}
        now = self.clock()

        def work(conn: Connection) -> None:
            if self._bump_thread(conn, threads.c.id == thread_id, 0, now, sets, adds) is None:
                raise NotFoundError(f"no thread {thread_id!r}")

        self._write(work)

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread; its messages, tool calls, usage, runs and steps go with it (cascade)."""
        self._write(lambda conn: conn.execute(sa.delete(threads).where(threads.c.id == thread_id)))

    def model_for_thread(self, thread_id: str) -> str | None:
        """The model pinned on the thread (one column read)."""
        with self._read() as conn:
            return conn.execute(sa.select(threads.c.model).where(threads.c.id == thread_id)).scalar()

    def acquire_thread(self, thread_id: str, run_id: str) -> bool:
        """Make ``run_id`` the thread's active run if none is (or it already is). Race-free."""
        if self.dialect == "postgresql":  # on every start: SQL text, without a SQLAlchemy Connection
            params = {"run_id": run_id, "now": self.clock(), "thread_id": thread_id}
            return bool(self._pipeline([(ACQUIRE_THREAD_SQL, params)])[0])
        free = sa.or_(threads.c.active_run_id.is_(None), threads.c.active_run_id == run_id)
        stmt = (
            sa.update(threads)
            .where(threads.c.id == thread_id, free)
            .values(active_run_id=run_id, updated_at=self.clock())
        )
        return bool(self._write(lambda conn: conn.execute(stmt).rowcount == 1, autocommit=True))

    def release_thread(self, thread_id: str, run_id: str) -> bool:
        """Clear the active run if it is ``run_id``."""
        stmt = (
            sa.update(threads)
            .where(threads.c.id == thread_id, threads.c.active_run_id == run_id)
            .values(active_run_id=None, updated_at=self.clock())
        )
        return bool(self._write(lambda conn: conn.execute(stmt).rowcount == 1))
