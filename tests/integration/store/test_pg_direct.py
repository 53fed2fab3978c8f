"""``_postgres.direct``: hot statements through libpq return exactly what psycopg's cursor returns,
raise what it raises, and leave the connection usable (or closed, when it cannot be)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.rows import dict_row

from lunora_jobs.store.sql._postgres.direct import run_direct

pytestmark = pytest.mark.integration


@pytest.fixture
def conn(pg_url: str) -> Iterator[psycopg.Connection[Any]]:
    url = sa.make_url(pg_url)
    raw = psycopg.connect(host=url.host, port=url.port, user=url.username, dbname=url.database,
                          autocommit=True)
    yield raw
    raw.close()


def _cursor(raw: psycopg.Connection[Any], sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    cursor = raw.cursor(row_factory=dict_row)
    cursor.execute(sql, params)
    return cursor.fetchall() if cursor.description else []


def _both(raw: psycopg.Connection[Any], sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    direct = run_direct(raw, [(sql, params)])
    assert direct is not None
    (rows,) = direct
    expected = _cursor(raw, sql, params)
    assert rows == expected and [list(map(type, r.values())) for r in rows] == [
        list(map(type, r.values())) for r in expected]
    return rows


def test_columns_decode_as_the_cursor_decodes_them(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "CREATE TABLE t (id varchar PRIMARY KEY, n bigint, i integer, b boolean, f double precision,"
        " d numeric, j json, jb jsonb, tx text, ts timestamptz, arr varchar[])"
    )
    conn.execute("INSERT INTO t VALUES ('a', 9007199254740993, 7, true, 1.5, 2.25, '{\"k\": [1, null]}',"
                 " '{\"z\": 1}', 'héllo', '2026-01-01T00:00:00Z', '{x,\"y z\"}'), ('b', NULL, NULL, NULL,"
                 " NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
    rows = _both(conn, "SELECT * FROM t WHERE id = ANY(%(ids)s::varchar[]) ORDER BY id", {"ids": ["a", "b"]})
    assert rows[0]["n"] == 9007199254740993 and rows[0]["d"] == Decimal("2.25")
    assert rows[0]["j"] == {"k": [1, None]} and rows[0]["arr"] == ["x", "y z"] and rows[1]["n"] is None
    assert _both(conn, "SELECT row_to_json(t) AS r FROM t WHERE id = %(id)s", {"id": "a"})[0]["r"]["i"] == 7
    assert _both(conn, "UPDATE t SET i = i + %(by)s WHERE id = %(id)s", {"by": 1, "id": "a"}) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))),
    items=st.lists(st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
                           max_size=8), max_size=5),
    number=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    real=st.floats(allow_nan=False),
    flag=st.booleans(),
)
def test_parameters_arrive_as_the_cursor_sends_them(
    conn: psycopg.Connection[Any], text: str, items: list[str], number: int, real: float, flag: bool
) -> None:
    sql = ("SELECT %(text)s::text AS text, %(items)s::varchar[] AS items, %(number)s::bigint AS number,"
           " %(real)s::float8 AS real, %(flag)s::boolean AS flag, %(none)s::text AS none,"
           " %(text)s::text = %(text)s::text AS again")
    params = {"text": text, "items": items, "number": number, "real": real, "flag": flag, "none": None}
    (row,) = _both(conn, sql, params)
    assert row == {**params, "again": True}


def test_special_floats(conn: psycopg.Connection[Any]) -> None:
    (row,) = _both(conn, "SELECT %(a)s::float8 AS a, %(b)s::float8 AS b", {"a": math.inf, "b": -math.inf})
    assert row == {"a": math.inf, "b": -math.inf}
    (nan,) = run_direct(conn, [("SELECT %(x)s::float8 AS x", {"x": math.nan})]) or [[]]
    assert math.isnan(nan[0]["x"])


@pytest.mark.parametrize("value", ["a\x00b", ["ok", "a\x00b"], Decimal("1"), {"k": 1}, [1, 2], ("p", "q"),
                                   b"raw"])
def test_what_it_does_not_encode_is_left_to_the_cursor_unsent(
    conn: psycopg.Connection[Any], value: Any
) -> None:
    conn.execute("CREATE TABLE seen (v text)")
    sql = "INSERT INTO seen VALUES ('sent') RETURNING %(v)s::text AS v"
    assert run_direct(conn, [("SELECT 1 AS one", {}), (sql, {"v": value})]) is None
    assert conn.execute("SELECT count(*) FROM seen").fetchone() == (0,)


def test_a_pipeline_is_one_implicit_transaction(conn: psycopg.Connection[Any]) -> None:
    conn.execute("CREATE TABLE k (id text PRIMARY KEY)")
    insert = ("INSERT INTO k VALUES (%(id)s) RETURNING id", {"id": "a"})
    count = ("SELECT count(*) AS n FROM k", {})
    assert run_direct(conn, [insert, count]) == [[{"id": "a"}], [{"n": 1}]]
    with pytest.raises(psycopg.errors.UniqueViolation):
        run_direct(conn, [("INSERT INTO k VALUES (%(id)s)", {"id": "b"}), insert, count])
    assert conn.execute("SELECT array_agg(id ORDER BY id) FROM k").fetchone() == (["a"],)  # b rolled back
    assert conn.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with pytest.raises(psycopg.errors.DivisionByZero):
        run_direct(conn, [("SELECT 1 / %(zero)s AS x", {"zero": 0})])
    assert run_direct(conn, [count]) == [[{"n": 1}]]


def test_statements_are_prepared_again_when_the_server_forgot_them_or_the_schema_moved(
    conn: psycopg.Connection[Any],
) -> None:
    conn.execute("CREATE TABLE s (id text)")
    conn.execute("INSERT INTO s VALUES ('a')")
    select = [("SELECT * FROM s WHERE id = %(id)s", {"id": "a"})]
    assert run_direct(conn, select) == [[{"id": "a"}]]
    conn.execute("DEALLOCATE ALL")  # what a pooler's DISCARD ALL does
    assert run_direct(conn, select) == [[{"id": "a"}]]
    conn.execute("ALTER TABLE s ADD COLUMN n bigint DEFAULT 3")  # the cached plan's row type changed
    assert run_direct(conn, select) == [[{"id": "a", "n": 3}]]
    assert run_direct(conn, [*select, *select]) == [[{"id": "a", "n": 3}]] * 2


@pytest.mark.parametrize("statements", [1, 2])
def test_a_lost_server_is_an_operational_error_and_leaves_the_connection_closed(
    conn: psycopg.Connection[Any], pg_url: str, statements: int
) -> None:
    assert run_direct(conn, [("SELECT 1 AS one", {})]) == [[{"one": 1}]]
    url = sa.make_url(pg_url)
    with psycopg.connect(host=url.host, port=url.port, user=url.username, dbname=url.database,
                         autocommit=True) as killer:
        killer.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
    with pytest.raises(psycopg.OperationalError):  # what the cursor raises: the store's outage error
        run_direct(conn, [("SELECT 1 AS one", {})] * statements)
    assert conn.closed


def test_other_threads_run_while_a_statement_waits(conn: psycopg.Connection[Any]) -> None:
    ticks = 0
    stop = threading.Event()

    def tick() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        before = ticks
        slept = run_direct(conn, [("SELECT pg_sleep(%(s)s) IS NULL AS slept", {"s": 0.3})])
        during = ticks - before
        assert slept == [[{"slept": False}]]
    finally:
        stop.set()
        ticker.join(timeout=10)
    assert during >= 10, "the wait held the interpreter's lock"  # ~300 ticks when it does not


def test_a_statement_the_server_will_not_prepare_goes_to_the_cursor(conn: psycopg.Connection[Any]) -> None:
    # The second needs the table the first creates: prepared up front it could not be.
    assert run_direct(conn, [("CREATE TABLE late (i int)", {}),
                             ("INSERT INTO late VALUES (%(i)s) RETURNING i", {"i": 1})]) is None
    assert conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'late'").fetchone() == (0,)
    assert run_direct(conn, [("SELEC 1", {})]) is None  # the cursor raises its SyntaxError
    assert run_direct(conn, [("SELECT 1 AS one", {})]) == [[{"one": 1}]]


def test_percent_signs_read_as_the_cursor_reads_them(conn: psycopg.Connection[Any]) -> None:
    rows = _both(conn, "SELECT 'a%%b' AS s, %(x)s::text LIKE 'p%%' AS p", {"x": "pq"})
    assert rows == [{"s": "a%b", "p": True}]
    assert run_direct(conn, [("SELECT %s::int AS n", {})]) is None  # psycopg's positional placeholders


def test_a_missing_parameter_is_left_to_the_cursor(conn: psycopg.Connection[Any]) -> None:
    assert run_direct(conn, [("SELECT %(a)s::text AS a", {})]) is None  # the cursor raises it, named
