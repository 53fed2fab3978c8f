"""The plumbing every ``SqlStore`` mixin shares: engine, clock, transactions, dialect-aware inserts.

Writes run through ``_write`` which retries a transaction that lost a deadlock or a lock wait
(MySQL 1213/1205, Postgres 40P01/40001, SQLite "database is locked"): the work inside is written
to be idempotent, so re-running it is always safe. ``_write`` and ``_query`` also re-run work whose
connection turned out dead (a restarted database): SQLAlchemy invalidates the pool on the
disconnect, so the retry runs on a fresh connection.

Round trips: reads run in autocommit (no BEGIN / ROLLBACK around a SELECT: in READ COMMITTED a
transaction buys a lone read nothing), and a write that is one statement may ask for autocommit too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from lunora_jobs.store._codec import Clock, wall_clock
from lunora_jobs.store.ddl import ensure_tables
from lunora_jobs.store.records import UsageEntry
from lunora_jobs.store.schema import threads
from lunora_jobs.store.sql._postgres.held import HeldConnections
from lunora_jobs.store.sql._postgres.pipeline import Rows, Statements, autocommit_pipeline

T = TypeVar("T")

_RETRY_SQLSTATES = {"40P01", "40001"}
_RETRY_MYSQL_CODES = {1213, 1205}
WRITE_RETRIES = 8
DISCONNECT_RETRIES = 2


def is_retryable(exc: DBAPIError) -> bool:
    """Whether a failed transaction lost a deadlock / lock wait and may simply be re-run."""
    orig = exc.orig
    if getattr(orig, "sqlstate", None) in _RETRY_SQLSTATES:
        return True
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int) and args[0] in _RETRY_MYSQL_CODES:
        return True
    return "database is locked" in str(orig)


class SqlBase:
    """Engine, clock and helpers. Not used directly: ``SqlStore`` composes the mixins over it."""

    transient_errors: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)
    """What a database outage raises (the engine retries a step's result write across it)."""

    single_statement_completion: bool = True
    """PostgreSQL: ``complete_step`` as one statement (``_postgres.completion``); False: the portable
    transaction of five statements (an ablation switch for benchmarks)."""

    def __init__(
        self, engine: Engine, *, clock: Clock | None = None, auto_create_tables: bool = True
    ) -> None:
        self.engine = engine
        self.clock: Clock = clock or wall_clock
        self.auto_create_tables = auto_create_tables
        self._ready = not auto_create_tables
        self._ready_lock = threading.Lock()
        # Shares the pool; only the connection's transaction mode differs.
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._held = HeldConnections(engine) if engine.dialect.name == "postgresql" else None

    @property
    def dialect(self) -> str:
        """``postgresql``, ``mysql`` (MariaDB too) or ``sqlite``."""
        return str(self.engine.dialect.name)

    def ensure_tables(self) -> None:
        """Create whatever is missing; only reads against a current schema. Safe to race."""
        ensure_tables(self.engine)
        self._ready = True

    def _prepare(self) -> None:
        if self._ready:
            return
        with self._ready_lock:
            if not self._ready:
                self.ensure_tables()

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """A connection for reads, in autocommit (one round trip per statement, nothing else)."""
        self._prepare()
        with self._autocommit.connect() as conn:
            yield conn

    def _query(self, work: Callable[[Connection], T]) -> T:
        """Run read-only ``work`` in autocommit; re-run it once on a fresh connection after a disconnect."""
        self._prepare()
        for attempt in range(DISCONNECT_RETRIES + 1):
            try:
                with self._autocommit.connect() as conn:
                    return work(conn)
            except DBAPIError as exc:
                if attempt == DISCONNECT_RETRIES or not exc.connection_invalidated:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _write(self, work: Callable[[Connection], T], *, autocommit: bool = False) -> T:
        """Run ``work`` in one transaction; re-run it when the database picked it as a deadlock victim
        or the connection died under it (a database restart; the pool hands out a fresh one).

        ``autocommit=True`` is for work that is a single atomic statement (plus reads): it saves the
        BEGIN and COMMIT round trips.
        """

        def once() -> T:
            if autocommit:
                with self._autocommit.connect() as conn:
                    return work(conn)
            with self.engine.begin() as conn:
                return work(conn)

        return self._retrying(once)

    def _retrying(self, once: Callable[[], T]) -> T:
        """``once()``, re-run after a deadlock / lock-wait loss or a dead connection (``_write``)."""
        self._prepare()
        disconnects = 0
        for attempt in range(WRITE_RETRIES):
            try:
                return once()
            except DBAPIError as exc:
                if exc.connection_invalidated and disconnects < DISCONNECT_RETRIES:
                    disconnects += 1  # idempotent work: a commit that did land is a no-op the 2nd time
                    continue
                if attempt == WRITE_RETRIES - 1 or not is_retryable(exc):
                    raise
                time.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    def _pipeline(self, statements: Statements) -> list[Rows]:
        """PostgreSQL: ``statements`` in one round trip, autocommit, on the thread's held psycopg
        connection (``_postgres.held``) or a pooled one, without SQLAlchemy's ``Connection``
        (``_postgres.pipeline.autocommit_pipeline``): the hot path's claims and completions. Retried
        like ``_write(work, autocommit=True)``: the work must be idempotent or fenced."""
        return self._retrying(lambda: autocommit_pipeline(self.engine, statements, self._held))

    def _costed(self, entry: UsageEntry, now: int) -> UsageEntry:
        """``entry`` with its cost and cost source; ``SqlPricingMixin`` prices it, the base leaves it."""
        return entry

    # -- dialect helpers ---------------------------------------------------------------------
    def _insert(self, table: sa.Table) -> Any:
        """The dialect's own INSERT construct (for ON CONFLICT / ON DUPLICATE KEY)."""
        if self.dialect == "postgresql":
            return postgresql.insert(table)
        if self.dialect == "sqlite":
            return sqlite.insert(table)
        return mysql.insert(table)

    def _insert_ignore(self, table: sa.Table, keys: Iterable[str]) -> Any:
        """An INSERT that skips rows colliding on the unique ``keys``; execute it with the rows as
        parameters (``conn.execute(stmt, rows)``): rows baked in with ``.values([...])`` would make a
        statement SQLAlchemy cannot cache, compiled again on every call (~1 ms of Python each)."""
        stmt = self._insert(table)
        keys = list(keys)
        if self.dialect == "mysql":
            # A no-op assignment: MySQL's INSERT IGNORE would also swallow FK and type errors.
            return stmt.on_duplicate_key_update({keys[0]: table.c[keys[0]]})
        return stmt.on_conflict_do_nothing(index_elements=keys)

    def _inserts_returning(self) -> bool:
        """Whether ``_insert_ignore(...).returning(...)`` returns nothing for a skipped row (ON
        CONFLICT DO NOTHING: PostgreSQL, SQLite); MariaDB's no-op update would return the old row."""
        return self.dialect != "mysql" and bool(self.engine.dialect.insert_returning)

    def _bump_thread(
        self,
        conn: Connection,
        where: sa.ColumnElement[bool],
        count: int,
        now: int,
        sets: dict[str, Any] | None = None,
        adds: dict[str, int] | None = None,
    ) -> tuple[str, int] | None:
        """Reserve ``count`` seqs on a thread (row-locking it), bump ``updated_at``, apply a patch.

        Returns ``(thread_id, last_reserved_seq)``, or None when no thread matched. The row lock is
        what serialises concurrent appenders, on every dialect, until the caller commits.
        """
        values: dict[str, Any] = {"updated_at": now, **(sets or {})}
        if count:
            values["next_seq"] = threads.c.next_seq + count
        for column, amount in (adds or {}).items():
            values[column] = threads.c[column] + amount
        stmt = sa.update(threads).where(where).values(values)
        if self.engine.dialect.update_returning:
            row = conn.execute(stmt.returning(threads.c.id, threads.c.next_seq)).first()
            return None if row is None else (str(row[0]), int(row[1]))
        if conn.execute(stmt).rowcount == 0:
            return None
        row = conn.execute(sa.select(threads.c.id, threads.c.next_seq).where(where)).first()
        return None if row is None else (str(row[0]), int(row[1]))
