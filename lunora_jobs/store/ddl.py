"""Provisioning: create whatever part of the schema is missing, and nothing else.

``ensure_tables(engine)`` is what ``auto_create_tables=True`` calls. The Alembic revisions build the
same schema from frozen DDL of each version (``migrations/versions``); a test compares the two on
every backend, so a migrated database never drifts from an auto-created one. Against a current
schema it only reads (three catalog queries: tables, columns, indexes), so it takes no table lock
and never waits on someone else's open transaction. When several processes start at once, a statement that
loses the race fails with "already exists"; it is re-checked against the catalog and counted as done.

Example::

    import sqlalchemy as sa
    from lunora_jobs.store.ddl import ensure_tables
    issued = ensure_tables(sa.create_engine("sqlite:///./.lunora/lunora.db"))  # 0 the second time
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateColumn, CreateIndex, CreateTable

from lunora_jobs.store.schema import metadata as agent_metadata

_TABLES = {
    "postgresql": "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()",
    "mysql": "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()",
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table'",
}
_COLUMNS = {
    "postgresql": "SELECT table_name, column_name FROM information_schema.columns"
    " WHERE table_schema = current_schema()",
    "mysql": "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = DATABASE()",
    "sqlite": "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p"
    " WHERE m.type = 'table'",
}
_INDEXES = {
    "postgresql": "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()",
    "mysql": "SELECT DISTINCT index_name FROM information_schema.statistics WHERE table_schema = DATABASE()",
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'index'",
}

RACE_RETRIES = 6


def _catalog(conn: Connection, queries: dict[str, str]) -> list[Any]:
    query = queries.get(conn.dialect.name)
    if query is None:
        raise NotImplementedError(
            f"Lunora Jobs supports postgresql, mysql/mariadb and sqlite, not {conn.dialect.name}"
        )
    return list(conn.execute(sa.text(query)))


def table_names(conn: Connection) -> set[str]:
    """Tables of the connection's current schema/database."""
    return {str(row[0]) for row in _catalog(conn, _TABLES)}


def column_names(conn: Connection) -> dict[str, set[str]]:
    """Column names per table of the current schema/database (one catalog query)."""
    found: dict[str, set[str]] = {}
    for row in _catalog(conn, _COLUMNS):
        found.setdefault(str(row[0]), set()).add(str(row[1]).lower())
    return found


def index_names(conn: Connection) -> set[str]:
    """Index names of the current schema/database, as the catalog spells them."""
    return {str(row[0]) for row in _catalog(conn, _INDEXES)}


def _has_table(conn: Connection, table: str) -> bool:
    return table in table_names(conn)


def _has_index(conn: Connection, index: str) -> bool:
    return index.lower() in {name.lower() for name in index_names(conn)}


def _has_indexes(conn: Connection, indexes: list[str]) -> bool:
    present = {name.lower() for name in index_names(conn)}
    return all(index.lower() in present for index in indexes)


def _mysql_add_indexes(conn: Connection, table: sa.Table, missing: list[sa.Index]) -> sa.TextClause:
    quote = conn.dialect.identifier_preparer.quote
    clauses = [
        f"ADD {'UNIQUE ' if idx.unique else ''}INDEX {quote(str(idx.name))} "
        f"({', '.join(quote(c.name) for c in idx.columns)})"
        for idx in missing
    ]
    return sa.text(f"ALTER TABLE {quote(table.name)} " + ", ".join(clauses))


def _has_column(conn: Connection, table: str, column: str) -> bool:
    return column.lower() in column_names(conn).get(table, set())


def _issue(conn: Connection, statement: sa.Executable, done: Callable[[], bool], *, own: bool) -> bool:
    """Run one DDL statement; on failure, re-check the catalog: a lost race counts as done.

    Returns True when this call created the object. ``own`` says the connection is ours and in
    autocommit, so a failed statement can be rolled back without touching anyone's transaction.
    """
    for attempt in range(RACE_RETRIES):
        try:
            conn.execute(statement)
            if own:
                conn.commit()
            return True
        except DBAPIError:
            if not own:
                raise
            conn.rollback()
            if done():
                return False
            if attempt == RACE_RETRIES - 1:
                raise
            # Lock waits and deadlocks between concurrent DDL resolve themselves; back off a little.
            time.sleep(0.05 * (attempt + 1))
    return False  # pragma: no cover - the loop always returns or raises


def apply_schema(conn: Connection, meta: sa.MetaData | None = None, *, own: bool = False) -> int:
    """Create missing tables, add missing columns, create missing indexes. Returns statements issued.

    ``own=False`` runs each statement on the caller's transaction and lets errors raise;
    ``own=True`` (``ensure_tables``) expects an autocommit connection and tolerates lost races.
    """
    meta = meta if meta is not None else agent_metadata
    issued = 0
    existing = table_names(conn)
    created: set[str] = set()
    for table in meta.sorted_tables:
        if table.name in existing:
            continue
        stmt = CreateTable(table, if_not_exists=True)
        issued += _issue(conn, stmt, partial(_has_table, conn, table.name), own=own)
        created.add(table.name)

    issued += _add_missing_columns(conn, meta, skip=created, own=own)

    indexes = {name.lower() for name in index_names(conn)}
    for table in meta.sorted_tables:
        missing = [
            i for i in sorted(table.indexes, key=lambda i: str(i.name)) if str(i.name).lower() not in indexes
        ]
        if not missing:
            continue
        if conn.dialect.name == "mysql":
            # One ALTER for all of a table's indexes: each MySQL DDL statement is a metadata commit.
            names = [str(i.name) for i in missing]
            issued += _issue(
                conn, _mysql_add_indexes(conn, table, missing), partial(_has_indexes, conn, names), own=own
            )
            continue
        for idx in missing:
            issued += _issue(conn, CreateIndex(idx), partial(_has_index, conn, str(idx.name)), own=own)
    return issued


def _add_missing_columns(conn: Connection, meta: sa.MetaData, *, skip: set[str], own: bool) -> int:
    """ALTER TABLE ... ADD COLUMN for columns a newer release declares (nullable or defaulted)."""
    if all(t.name in skip for t in meta.sorted_tables):
        return 0
    present = column_names(conn)
    issued = 0
    preparer = conn.dialect.identifier_preparer
    for table in meta.sorted_tables:
        have = present.get(table.name)
        if table.name in skip or have is None:
            continue
        for column in table.columns:
            if column.name.lower() in have:
                continue
            ddl = str(CreateColumn(column).compile(dialect=conn.dialect))
            stmt = sa.text(f"ALTER TABLE {preparer.format_table(table)} ADD COLUMN {ddl}")
            issued += _issue(
                conn,
                stmt,
                partial(_has_column, conn, table.name, column.name),
                own=own,
            )
    return issued


def ensure_tables(engine: Engine, meta: sa.MetaData | None = None) -> int:
    """Idempotently provision the agent tables on a connection of its own (autocommit).

    Safe to call from several processes at once. Returns how many DDL statements it issued.
    """
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        return apply_schema(conn, meta, own=True)
