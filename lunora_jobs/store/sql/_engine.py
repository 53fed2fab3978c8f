"""``create_engine``: a SQLAlchemy engine set up the way the store relies on.

Drivers picked from the URL (psycopg 3, PyMySQL), a pre-ping on checkout that costs no round trip on
PostgreSQL, READ COMMITTED on MySQL, and WAL + busy timeout + foreign keys on every SQLite connection.
"""

from __future__ import annotations

import select
import sqlite3
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.engine import Engine

from lunora_jobs import jsonio
from lunora_jobs.config import normalize_database_url

SQLITE_BUSY_TIMEOUT_MS = 30_000


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Per connection: SQLite forgets foreign_keys (and the busy timeout) on every new connection.
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys = ON")
    _enable_wal(cursor)
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()


def _enable_wal(cursor: Any) -> None:
    # WAL is a property of the file, so only the first connection ever switches it. That switch
    # needs an exclusive lock and SQLite answers SQLITE_BUSY at once instead of running the busy
    # handler, so processes opening a fresh file together must retry it themselves.
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() in ("wal", "memory"):
                return
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class PollingPsycopgDialect(PGDialect_psycopg):
    """psycopg 3 whose pool pre-ping costs no round trip (it runs on every checkout).

    An idle, healthy connection has nothing to read: a server that restarted or terminated the
    backend has sent its FATAL message or closed the socket, which makes it readable (or closes the
    driver connection). Only then is the real ping sent — it consumes a stray message on a live
    connection, or fails and lets the pool reconnect. ``do_ping`` is the documented dialect method
    ``pool_pre_ping`` calls; this subclass is registered as the ``postgresql+lunora_psycopg`` driver.
    """

    supports_statement_cache = True

    def do_ping(self, dbapi_connection: Any) -> bool:
        """True when the connection is usable; the real ping only when the socket has something."""
        pgconn = dbapi_connection.pgconn
        if dbapi_connection.closed or dbapi_connection.broken or pgconn.socket < 0:
            return False
        return bool(super().do_ping(dbapi_connection)) if _readable(pgconn.socket) else True  # type: ignore[no-untyped-call]


registry.register("postgresql.lunora_psycopg", __name__, "PollingPsycopgDialect")


def _readable(fd: int) -> bool:
    """Whether ``fd`` has data (or EOF) waiting, without blocking. ``poll``: no 1024-fd limit."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)  # Windows: no poll()
    return bool(readable)


def create_engine(url: str, **options: Any) -> Engine:
    """An engine for ``url`` with the settings the store relies on.

    Postgres/MySQL URLs are normalized to the shipped drivers; connections are pre-pinged (on
    PostgreSQL by polling the socket, without a round trip: ``PollingPsycopgDialect``); MySQL
    runs READ COMMITTED (fewer gap locks, fresh reads after a row lock); SQLite gets WAL, a busy
    timeout and ``PRAGMA foreign_keys = ON`` on every connection.
    """
    url = normalize_database_url(url)
    if url.startswith("postgresql+psycopg:"):
        url = "postgresql+lunora_psycopg:" + url[len("postgresql+psycopg:") :]
        # The hot path's fused reads return rows as json (row_to_json, json_agg): orjson decodes them.
        options.setdefault("json_deserializer", jsonio.loads)
    options.setdefault("pool_pre_ping", True)
    if url.startswith("mysql"):
        options.setdefault("isolation_level", "READ COMMITTED")
    if url.startswith("sqlite"):
        options.setdefault("connect_args", {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        if url in ("sqlite://", "sqlite:///:memory:"):
            # One shared connection: every new connection to :memory: would be a new, empty database.
            options.setdefault("poolclass", sa.pool.StaticPool)
            options["connect_args"] = {**options["connect_args"], "check_same_thread": False}
    engine = sa.create_engine(url, **options)
    if engine.dialect.name == "sqlite":
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    return engine
