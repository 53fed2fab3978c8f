"""Several statements in ONE round trip on PostgreSQL: psycopg 3's pipeline mode.

SQLAlchemy reads each result as soon as it executes a statement, which defeats pipelining, so the
statements here are SQL text with ``%(name)s`` parameters, sent on a pooled psycopg connection
inside its ``pipeline()``: every statement goes out, then one ``Sync``, then
every result comes back. Up to the ``Sync`` the server runs them as one implicit transaction (in
order, each statement with a fresh READ COMMITTED snapshot), so a read placed after a write sees it.

A single statement skips pipeline mode (same one round trip, ~50 µs less Python: the pipeline's
enter, sync and result bookkeeping). Both go straight through libpq (``direct.py``: no cursor, no
psycopg pipeline object) when every parameter is of a type it encodes, as on the hot path; through
the cursor otherwise.

``autocommit_pipeline`` runs on the calling thread's held connection (``held.py``: kept in
autocommit, pre-pinged by a poll of its socket) where the store gives it one, else on a psycopg
connection straight from the engine's pool (checkout with its pre-ping, autocommit switched on for
the call and off again before the connection goes back). Either way there is no SQLAlchemy
``Connection`` around it: its checkout, isolation-level switch and reset cost ~0.1 ms of Python per
call, twice per step; the pool's own checkout and the switches cost about as much again, which the
held connection saves.

Driver errors are re-raised as SQLAlchemy's ``DBAPIError`` (with ``connection_invalidated`` set and
the connection invalidated on a disconnect), so ``_write`` / ``_query`` retries work as for any
other statement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect, Engine

from lunora_jobs.store.sql._postgres.held import HeldConnections

Rows = list[dict[str, Any]]
Statements = Sequence[tuple[str, Mapping[str, Any]]]


def autocommit_pipeline(
    engine: Engine, statements: Statements, held: HeldConnections | None = None
) -> list[Rows]:
    """Run ``statements`` in one round trip in autocommit, without a SQLAlchemy ``Connection``: on
    the calling thread's held connection (``held``), else on one checked out of the engine's pool;
    the rows of each (``[]`` for one returning none)."""
    import psycopg

    try:
        raw = held.connection() if held is not None else None
        fairy = engine.raw_connection() if raw is None else None
    except psycopg.Error as exc:  # no connection (the server is down): raised as SQLAlchemy would
        lost = bool(engine.dialect.is_disconnect(exc, None, None))  # type: ignore[arg-type]
        raise sa.exc.DBAPIError.instance(
            None, None, exc, psycopg.Error, connection_invalidated=lost, dialect=engine.dialect
        ) from exc
    if fairy is None:
        assert held is not None
        return _run_held(held, raw, statements, engine.dialect)
    try:
        raw = fairy.driver_connection
        assert raw is not None
        try:
            raw.autocommit = True
        except psycopg.Error as exc:  # a connection the pre-ping passed but that is gone now
            raise _wrapped(exc, raw, engine.dialect, fairy.invalidate, "SET autocommit", {}) from exc
        try:
            return _run(raw, statements, engine.dialect, fairy.invalidate)
        finally:
            if not raw.closed:
                try:
                    raw.autocommit = False  # the pool's other users run transactions
                except psycopg.Error as exc:
                    fairy.invalidate(exc)
    finally:
        fairy.close()


def _run_held(held: HeldConnections, raw: Any, statements: Statements, dialect: Dialect) -> list[Rows]:
    from psycopg.pq import TransactionStatus

    try:
        return _run(raw, statements, dialect, lambda _exc: held.discard(raw))
    except BaseException:
        # A statement cut short (a time limit raised mid-query) or a broken socket: not reusable.
        if not raw.closed and raw.info.transaction_status != TransactionStatus.IDLE:
            held.discard(raw)
        raise


Invalidate = Callable[[BaseException], None]


def _run(raw: Any, statements: Statements, dialect: Dialect, invalidate: Invalidate) -> list[Rows]:
    import psycopg
    from psycopg.rows import dict_row

    from lunora_jobs.store.sql._postgres.direct import run_direct  # imports psycopg: PostgreSQL only

    sql, params = statements[0]
    try:
        direct = run_direct(raw, statements)  # straight through libpq (``direct.py``)
        if direct is not None:
            return direct
        if len(statements) == 1:  # one statement: a plain execute, without the pipeline's own Python
            cursor = raw.cursor(row_factory=dict_row)
            cursor.execute(sql, params)
            return [cursor.fetchall() if _has_rows(cursor) else []]
        cursors = []
        with raw.pipeline():
            for sql, params in statements:
                cursor = raw.cursor(row_factory=dict_row)
                cursor.execute(sql, params)
                cursors.append(cursor)
        # The result's status, not ``cursor.description``: that builds a Column object per column.
        return [cursor.fetchall() if _has_rows(cursor) else [] for cursor in cursors]
    except psycopg.Error as exc:
        raise _wrapped(exc, raw, dialect, invalidate, sql, params) from exc


def _wrapped(
    exc: Exception, raw: Any, dialect: Dialect, invalidate: Invalidate, sql: str, params: Mapping[str, Any],
) -> sa.exc.StatementError:
    import psycopg

    lost = bool(dialect.is_disconnect(exc, raw, None))  # type: ignore[arg-type]
    if lost:
        invalidate(exc)
    return sa.exc.DBAPIError.instance(
        sql, dict(params), exc, psycopg.Error, connection_invalidated=lost, dialect=dialect
    )


def _has_rows(cursor: Any) -> bool:
    from psycopg.pq import ExecStatus

    result = cursor.pgresult
    return result is not None and result.status == ExecStatus.TUPLES_OK


class Record:
    """A dict row dressed as a SQLAlchemy row for the ``_rows`` decoders (they read ``_mapping``)."""

    __slots__ = ("_mapping",)

    def __init__(self, mapping: Mapping[str, Any]) -> None:
        self._mapping = mapping
