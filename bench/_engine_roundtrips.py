"""Round trips per engine step, counted in-process around ``execute_step`` (used by ``engine.py``).

The steps run in this process over the real PostgreSQL store and Redis lock, while every dispatch is
still published to the broker (on a queue nobody consumes) so its round trip is counted too.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import uuid
from typing import Any


class _Counter:
    """Counts what one step costs in round trips.

    - SQL statements and transactions (commit + rollback) through SQLAlchemy events;
    - pool checkouts;
    - PostgreSQL round trips, exactly: libpq's protocol trace of every pooled connection, counting
      the frontend messages that end an exchange (a simple ``Query`` — BEGIN, COMMIT, pings
      included — or the ``Sync`` closing an extended-protocol statement);
    - Redis round trips at the redis-py connection (a pipeline counts once): lock and broker publish.
    """

    FIELDS = ("sql", "tx", "checkouts", "pg", "redis")

    def __init__(self) -> None:
        import redis.connection
        import sqlalchemy as sa
        from sqlalchemy.engine import Engine
        from sqlalchemy.pool import Pool

        self.counts = dict.fromkeys(self.FIELDS, 0)
        self._trace = tempfile.TemporaryFile("w+b")  # noqa: SIM115 - lives as long as the counter
        self._offset = 0
        sa.event.listen(Engine, "before_cursor_execute", lambda *_: self._bump("sql"))
        sa.event.listen(Engine, "commit", lambda *_: self._bump("tx"))
        sa.event.listen(Engine, "rollback", lambda *_: self._bump("tx"))
        sa.event.listen(Pool, "checkout", lambda *_: self._bump("checkouts"))
        sa.event.listen(Pool, "connect", self._on_connect)
        send: Any = redis.connection.AbstractConnection.send_packed_command
        counter = self

        def counted_send(conn: Any, command: Any, check_health: bool = True) -> Any:
            counter._bump("redis")
            return send(conn, command, check_health)

        redis.connection.AbstractConnection.send_packed_command = counted_send  # type: ignore[method-assign]

    def _on_connect(self, dbapi_connection: Any, _record: Any) -> None:
        from psycopg.pq import Trace

        pgconn = getattr(dbapi_connection, "pgconn", None)
        if pgconn is not None:  # connections made before the counter existed are not traced
            pgconn.trace(self._trace.fileno())
            pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)

    def _bump(self, name: str) -> None:
        self.counts[name] += 1

    def _count_pg(self) -> None:
        # libpq writes frontend messages as it sends them; only new lines are read.
        self._trace.seek(self._offset)
        chunk = self._trace.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.splitlines():
            fields = line.split(b"\t")
            if len(fields) > 2 and fields[0] == b"F" and fields[2].strip() in (b"Query", b"Sync"):
                self.counts["pg"] += 1

    def snapshot(self) -> tuple[int, ...]:
        self._count_pg()
        return tuple(self.counts[name] for name in self.FIELDS)


class _StoreCalls:
    """Attributes PostgreSQL round trips to the store method that made them (outermost call only)."""

    def __init__(self, store: Any, counter: _Counter) -> None:
        self.calls: list[tuple[str, int]] = []
        self._depth = 0
        for name in dir(type(store)):
            method = getattr(store, name, None)
            if not name.startswith("_") and callable(method):
                setattr(store, name, self._wrap(name, method, counter))

    def _wrap(self, name: str, method: Any, counter: _Counter) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            before = counter.snapshot()[3]
            try:
                return method(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.calls.append((name, counter.snapshot()[3] - before))

        return counted


RoundTrips = dict[str, tuple[tuple[float, ...], dict[str, float]]]


def count_round_trips(queue: str, runs: int = 3) -> RoundTrips:
    """Per step kind: the mean of each ``_Counter`` field for one ``execute_step``, and the mean
    PostgreSQL round trips per step of each store method it called."""
    import _common
    import redis as redis_lib
    from hotpath import CollectingDispatcher

    dispatcher = CollectingDispatcher(None, queue)  # the broker of CELERY_BROKER_URL
    lunora = _common.build_lunora(dispatcher=dispatcher)
    counter = _Counter()
    calls = _StoreCalls(lunora.store, counter)
    totals: dict[str, list[tuple[int, ...]]] = {}
    by_call: dict[str, dict[str, int]] = {}
    for i in range(runs + 1):  # the first run warms caches and prepared statements
        lunora.agents.bench.run(input="go", thread_key=f"rt-{uuid.uuid4().hex}")
        while dispatcher.pending:
            task = dispatcher.pending.popleft()
            before = counter.snapshot()
            calls.calls.clear()
            lunora.execute_step(task.run_id, task.step)
            after = counter.snapshot()
            if i:
                delta = tuple(b - a for a, b in zip(before, after, strict=True))
                totals.setdefault(task.kind, []).append(delta)
                for name, trips in calls.calls:
                    kind_calls = by_call.setdefault(task.kind, {})
                    kind_calls[name] = kind_calls.get(name, 0) + trips
    redis_lib.Redis.from_url(os.environ["CELERY_BROKER_URL"]).delete(queue)
    return {
        kind: (
            tuple(statistics.mean(d[i] for d in deltas) for i in range(len(_Counter.FIELDS))),
            {name: trips / len(deltas) for name, trips in by_call.get(kind, {}).items()},
        )
        for kind, deltas in totals.items()
    }
