"""Several statements in ONE round trip on PostgreSQL: psycopg 3's pipeline mode.

SQLAlchemy reads each result as soon as it executes a statement, which defeats pipelining, so the
statements here are SQL text with ``%(name)s`` parameters, sent on the pooled connection's psycopg
connection inside ``Connection.pipeline()``: every statement goes out, then one ``Sync``, then
every result comes back. Up to the ``Sync`` the server runs them as one implicit transaction (in
order, each statement with a fresh READ COMMITTED snapshot), so a read placed after a write sees it.

Driver errors are re-raised as SQLAlchemy's ``DBAPIError`` (with ``connection_invalidated`` set and
the connection invalidated on a disconnect), so ``_write`` / ``_query`` retries work as for any
other statement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

Rows = list[dict[str, Any]]


def pipelined(conn: Connection, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Rows]:
    """Run ``statements`` in one round trip; the rows of each (``[]`` for one returning none)."""
    import psycopg
    from psycopg.rows import dict_row

    raw: Any = conn.connection.driver_connection
    sql, params = statements[0]
    try:
        cursors = []
        with raw.pipeline():
            for sql, params in statements:
                cursor = raw.cursor(row_factory=dict_row)
                cursor.execute(sql, params)
                cursors.append(cursor)
        # The result's status, not ``cursor.description``: that builds a Column object per column.
        return [cursor.fetchall() if _has_rows(cursor) else [] for cursor in cursors]
    except psycopg.Error as exc:
        lost = bool(conn.dialect.is_disconnect(exc, raw, None))  # type: ignore[arg-type]
        if lost:
            conn.invalidate(exc)
        raise sa.exc.DBAPIError.instance(
            sql, dict(params), exc, psycopg.Error, connection_invalidated=lost, dialect=conn.dialect
        ) from exc


def _has_rows(cursor: Any) -> bool:
    from psycopg.pq import ExecStatus

    result = cursor.pgresult
    return result is not None and result.status == ExecStatus.TUPLES_OK


class Record:
    """A dict row dressed as a SQLAlchemy row for the ``_rows`` decoders (they read ``_mapping``)."""

    __slots__ = ("_mapping",)

    def __init__(self, mapping: Mapping[str, Any]) -> None:
        self._mapping = mapping
