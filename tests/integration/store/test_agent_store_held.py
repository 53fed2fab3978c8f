"""The hot path's held connections on PostgreSQL (``store/sql/_postgres/held.py``).

A thread keeps one autocommit connection for the claims and completions; these tests pin what makes
that safe: one connection per thread and no more than the limit, a terminated backend or a
connection left inside a transaction replaced without an error reaching the caller, a thread's
connection closed when the thread ends, a forked child never touching its parent's connection,
and ``close()`` closing them all.
"""

from __future__ import annotations

import gc
import multiprocessing
import threading
import time
from typing import Any

import pytest
import sqlalchemy as sa

from lunora_jobs.store import SqlStore

pytestmark = pytest.mark.integration

BACKEND_PID = [("SELECT pg_backend_pid() AS pid", {})]


def _pid(store: SqlStore) -> int:
    return int(store._pipeline(BACKEND_PID)[0][0]["pid"])


def _alive(admin: sa.Engine, pid: int) -> bool:
    with admin.connect() as conn:
        return bool(conn.execute(sa.text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"),
                                 {"pid": pid}).scalar_one())


def _wait_gone(admin: sa.Engine, pid: int) -> None:
    deadline = time.monotonic() + 10
    while _alive(admin, pid):
        assert time.monotonic() < deadline, f"backend {pid} is still there"
        time.sleep(0.02)


@pytest.fixture
def admin(pg_url: str) -> Any:
    url = sa.engine.make_url(pg_url).set(database="postgres")
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    yield engine
    engine.dispose()


@pytest.fixture
def store(pg_url: str) -> Any:
    sql = SqlStore.from_url(pg_url)
    yield sql
    sql.close()


def test_a_thread_keeps_one_autocommit_connection_outside_the_pool(store: SqlStore) -> None:
    checkouts: list[object] = []
    sa.event.listen(store.engine.pool, "checkout", lambda *a: checkouts.append(a))
    first = _pid(store)
    before = len(checkouts)
    assert [_pid(store) for _ in range(5)] == [first] * 5
    assert len(checkouts) == before, "the held connection is not checked out of the pool"
    with store._read() as conn:  # the pool's connections are other backends
        assert conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() != first
    # autocommit: a write is visible to another connection at once, no COMMIT sent
    store._pipeline([("CREATE TABLE held_probe (i int)", {}), ("INSERT INTO held_probe VALUES (1)", {})])
    with store._read() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM held_probe")).scalar_one() == 1


def test_threads_past_the_limit_use_the_pool_and_an_ended_threads_connection_is_closed(
    store: SqlStore, admin: sa.Engine
) -> None:
    main = _pid(store)
    seen: dict[str, int] = {}

    def in_thread(name: str) -> None:
        seen[name] = _pid(store)
        seen[name + "-again"] = _pid(store)

    worker = threading.Thread(target=in_thread, args=("second",))
    worker.start()
    worker.join()
    assert seen["second"] == seen["second-again"] != main  # the second thread held its own
    del worker
    gc.collect()  # the thread object goes with its last reference; a cycle would wait for the collector
    _wait_gone(admin, seen["second"])  # closed with its thread
    hold = threading.Event()
    release = threading.Event()

    def holder() -> None:
        seen["holder"] = _pid(store)
        hold.set()
        release.wait(10)

    keeper = threading.Thread(target=holder)
    keeper.start()
    assert hold.wait(10)
    try:
        # The limit (2) is reached: a third thread checks out of the pool, each call anew.
        third = threading.Thread(target=in_thread, args=("third",))
        third.start()
        third.join()
        assert seen["third"] not in (main, seen["holder"])
        assert _alive(admin, seen["holder"])
    finally:
        release.set()
        keeper.join()


def test_a_terminated_backend_is_replaced_without_an_error(store: SqlStore, admin: sa.Engine) -> None:
    first = _pid(store)
    with admin.connect() as conn:
        assert conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": first}).scalar_one()
    _wait_gone(admin, first)
    second = _pid(store)  # the socket poll saw the termination; a fresh connection answered
    assert second != first
    assert _pid(store) == second


def test_a_connection_that_dies_under_a_statement_is_replaced_and_the_work_re_run(store: SqlStore) -> None:
    first = _pid(store)
    store._pipeline([("CREATE SEQUENCE held_kill_once", {})])
    # The first attempt ends its own backend mid-statement (past the pre-ping): the driver error is a
    # disconnect, so the connection is dropped and the statement re-run on a fresh one.
    (rows,) = store._pipeline([(
        "SELECT CASE WHEN nextval('held_kill_once') = 1 THEN pg_terminate_backend(pg_backend_pid()) END AS k,"
        " pg_backend_pid() AS pid", {},
    )])
    assert rows[0]["pid"] != first
    assert _pid(store) == rows[0]["pid"]


def test_a_connection_left_inside_a_transaction_is_dropped(store: SqlStore, admin: sa.Engine) -> None:
    first = _pid(store)
    with pytest.raises(sa.exc.DBAPIError):
        store._pipeline([("BEGIN", {}), ("SELECT 1 / 0", {})])  # an explicit transaction, failed
    _wait_gone(admin, first)
    assert _pid(store) != first


def _child_pid(store: SqlStore, out: Any) -> None:
    out.put(_pid(store))


def test_a_forked_child_opens_its_own_and_leaves_the_parents_alone(store: SqlStore) -> None:
    parent = _pid(store)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_child_pid, args=(store, out))
    child.start()
    try:
        child_pid = out.get(timeout=30)
    finally:
        child.join(30)
    assert child.exitcode == 0
    assert child_pid != parent
    assert _pid(store) == parent  # still the parent's own, still working after the child exited


def test_close_closes_the_held_connections(store: SqlStore, admin: sa.Engine) -> None:
    held = _pid(store)
    store.close()
    _wait_gone(admin, held)
    assert _pid(store) != held  # a closed store's calls go through the pool
