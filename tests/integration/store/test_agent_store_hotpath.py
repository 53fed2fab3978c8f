"""The hot path on PostgreSQL: database round trips and wall time of claim_step + complete_step.

Prints the measurement (run with ``-s`` to see it) and pins the round trips, counted on the wire
(``bench/rtproxy.py``: the hot path's statements go to psycopg directly, past SQLAlchemy's events),
so a change that adds a round trip to every step shows up as a failing test rather than a slower fleet.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from lunora_jobs.store import NewMessage, NewRun, SqlStore, StepCompletion, UsageEntry

# Appended, not prepended: bench/rag.py must never shadow the ``rag`` package for later imports.
sys.path.append(str(Path(__file__).resolve().parents[3] / "bench"))
from rtproxy import RoundTripProxy

pytestmark = pytest.mark.integration


def test_claim_and_complete_round_trips_and_wall_time(pg_url: str) -> None:
    url = sa.engine.make_url(pg_url)
    relay = RoundTripProxy(url.host or "127.0.0.1", url.port or 5432, postgres=True).start()
    store = SqlStore.from_url(url.set(port=relay.port).render_as_string(hide_password=False))
    thread = store.ensure_thread("t1", owner="alice")
    store.create_run(NewRun(id="r1", thread_id=thread.id, agent="a", input=None, owner="alice"))
    counts = {"statements": 0, "transactions": 0, "checkouts": 0, "round_trips": 0}
    sa.event.listen(
        store.engine, "commit", lambda *a: counts.__setitem__("transactions", counts["transactions"] + 1)
    )
    sa.event.listen(
        store.engine.pool, "checkout", lambda *a: counts.__setitem__("checkouts", counts["checkouts"] + 1)
    )

    claim_time = [0.0]

    def one(i: int) -> None:
        name = f"llm:turn:{i}"
        t0 = time.perf_counter()
        claim = store.claim_step("r1", name, owner="w1", lease_ms=60_000)
        claim_time[0] += time.perf_counter() - t0
        assert claim.outcome == "claimed"
        done = store.complete_step(
            "r1",
            name,
            claim.step.generation,
            StepCompletion(
                result={"text": "ok", "i": i},
                messages=[
                    NewMessage(key=f"r1:assistant:{i}", role="assistant", content="ok " * 50, run_id="r1")
                ],
                usage=UsageEntry(
                    actor="alice", model="m", input_tokens=120, output_tokens=30, run_id="r1", step=name
                ),
                run_patch={"add_turns": 1, "add_input_tokens": 120, "add_output_tokens": 30},
                thread_patch={"add_input_tokens": 120, "add_output_tokens": 30},
            ),
        )
        assert done

    for i in range(20):  # warm the pool and the server's caches
        one(i)
    for key in counts:
        counts[key] = 0
    claim_time[0] = 0.0
    n = 200
    started, trips, statements = time.perf_counter(), relay.count(), relay.count_statements()
    for i in range(20, 20 + n):
        one(i)
    elapsed = time.perf_counter() - started
    counts["round_trips"] = relay.count() - trips
    counts["statements"] = relay.count_statements() - statements
    per_step = {k: v / n for k, v in counts.items()}
    print(
        f"\nclaim_step + complete_step on PostgreSQL (through a counting relay), {n} steps: "
        f"{elapsed / n * 1000:.2f} ms per step; round trips/step={per_step['round_trips']:.1f} "
        f"statements on the wire/step={per_step['statements']:.1f} "
        f"transactions/step={per_step['transactions']:.1f} "
        f"pool checkouts (pre-ping = a socket poll)/step={per_step['checkouts']:.1f}; "
        f"of which claim_step {claim_time[0] / n * 1000:.2f} ms"
    )
    # claim: 1 autocommit upsert (no BEGIN/COMMIT); complete: ONE autocommit statement whose
    # data-modifying CTEs update the step, the thread (seq + totals) and the run and insert the
    # messages and the usage row (see store/sql/_postgres/completion.py) — two round trips per step in all.
    assert per_step["round_trips"] == 2
    assert per_step["statements"] == 2  # no BEGIN, no COMMIT, no pool ping on the wire
    assert per_step["transactions"] == 0
    run = store.get_run("r1")
    assert run is not None and run.turns == 20 + n
    assert len(store.list_messages(thread.id)) == 20 + n
    store.close()
    relay.stop()


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """``plan`` and every node under it."""
    return [plan, *(node for child in plan.get("Plans", []) for node in _nodes(child))]


def _steps_scans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of ``plan`` that reads ``agent_steps``."""
    return [node for node in _nodes(plan) if node.get("Relation Name") == "agent_steps"]


def _run_of_twelve_turns(pg_url: str) -> str:
    """A run whose ledger holds 12 completed turns, each with one tool call ``c<i>``; its psycopg DSN."""
    store = SqlStore.from_url(pg_url)
    thread = store.ensure_thread("t-plan", owner="alice")
    store.create_run(NewRun(id="r-plan", thread_id=thread.id, agent="a", input=None, owner="alice"))
    turns = 12
    for i in range(turns):
        name = f"llm:turn:{i}"
        claim = store.claim_step("r-plan", name, owner="w1", lease_ms=60_000)
        result = {"turn": {"tool_calls": [{"id": f"c{i}", "name": "noop", "arguments": {}}]}}
        assert store.complete_step("r-plan", name, claim.step.generation, StepCompletion(result=result))
    store.update_run("r-plan", turns=turns)
    store.close()
    return sa.engine.make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)


def _assert_probes_by_primary_key(explained: Any) -> None:
    """Every read of ``agent_steps`` in an ``EXPLAIN (ANALYZE, FORMAT JSON)`` row is a (run_id, name)
    probe that removed no row: none reads the run's other ledger rows."""
    row = explained.fetchone()
    assert row is not None
    scans = _steps_scans(row[0][0]["Plan"])
    assert scans, row
    for scan in scans:
        cond = scan.get("Index Cond", "")
        assert "run_id" in cond and "name" in cond, scan
        assert scan.get("Rows Removed by Filter", 0) == 0, scan
        assert scan.get("Rows Removed by Join Filter", 0) == 0, scan


def _generic_execute(conn: Any, name: str, sql: str, params: dict[str, Any]) -> str:
    """Prepare ``sql`` (``%(name)s`` placeholders) as ``name`` on ``conn`` under a generic plan (as a
    prepared statement gets one from its 6th execution); the ``EXECUTE`` of it with ``params``."""
    import psycopg.sql

    from lunora_jobs.store.sql._postgres.direct import _positional

    positional = _positional(sql)
    assert positional is not None
    text, names = positional
    conn.execute("SET plan_cache_mode = force_generic_plan")
    conn.execute(b"PREPARE " + name.encode() + b" AS " + text)
    return psycopg.sql.SQL("EXECUTE {}({})").format(
        psycopg.sql.Identifier(name),
        psycopg.sql.SQL(", ").join(psycopg.sql.Literal(params[key]) for key in names)).as_string(conn)


def test_tool_claim_probes_its_turn_by_primary_key_in_a_generic_plan(pg_url: str) -> None:
    """The tool claim's check finds the turn that made the call with a (run_id, name) probe, even in
    the generic plan a prepared statement gets (no parameter values, no statistics on a fresh table):
    a probe by run_id alone would parse the result of every ledger row of the run as jsonb."""
    import psycopg

    from lunora_jobs.store.sql._postgres.statements import _CLAIMABLE_CALL

    dsn = _run_of_twelve_turns(pg_url)
    check = (_CLAIMABLE_CALL.replace("%(run_id)s", "$1").replace("%(agents)s", "$2")
             .replace("%(call_id)s", "$3"))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute(f"PREPARE claimable(varchar, varchar[], text) AS SELECT {check} AS ok")
        assert conn.execute("EXECUTE claimable('r-plan', '{a}', 'c11')").fetchone() == (True,)
        # c3 is an older turn's call: only the latest turn's calls are claimable
        assert conn.execute("EXECUTE claimable('r-plan', '{a}', 'c3')").fetchone() == (False,)
        _assert_probes_by_primary_key(
            conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claimable('r-plan', '{a}', 'c11')"))
        # The turn's memo is parsed as jsonb once per check, not once per test of it: a large memo
        # (a turn whose calls carry kilobytes of arguments) is read from TOAST and parsed again for
        # each cast. The tests filter on the parsed column; the one cast is the scan's output.
        verbose = conn.execute("EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE claimable('r-plan', '{a}', 'c11')")
        plan = verbose.fetchone()
    assert plan is not None
    nodes = _nodes(plan[0][0]["Plan"])
    filters = " ".join(node.get("Filter", "") for node in nodes)
    assert "tool_calls" in filters and "::jsonb" not in filters, filters
    computed = [node for node in nodes for output in node.get("Output", []) if output.endswith("::jsonb")]
    assert len(computed) == 1, nodes


def test_tool_read_probes_the_latest_turn_by_primary_key_in_a_generic_plan(pg_url: str) -> None:
    """The run with its latest turn's row, which a tool step reads with its claim, is a (run_id, name)
    probe in the generic plan too: a scan of the run's ledger by run_id grew with the run's length."""
    import psycopg
    from psycopg.rows import dict_row, tuple_row

    from lunora_jobs.store.sql._runs import pg_text

    dsn = _run_of_twelve_turns(pg_url)
    sql, consts = pg_text("run_with_latest_turn")
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        execute = _generic_execute(conn, "latest", sql, {**consts, "run_id": "r-plan"})
        row = conn.execute(execute).fetchone()
        assert row is not None and row["id"] == "r-plan" and row["step_name"] == "llm:turn:11"
        with conn.cursor(row_factory=tuple_row) as cursor:
            _assert_probes_by_primary_key(cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {execute}"))


def test_completion_finds_its_step_by_primary_key_in_a_generic_plan(pg_url: str) -> None:
    """The completion's fenced update of its step is a (run_id, name) probe in the generic plan, as
    the claim's: by the (status, lease) index it read every running step of every run (and the dead
    index entries of the steps that ran since the last vacuum) to find its own."""
    import psycopg

    from lunora_jobs.store.sql._postgres.completion import completion_sql

    store = SqlStore.from_url(pg_url)
    thread = store.ensure_thread("t-done", owner="alice")
    for i in range(20):  # other runs' steps, running meanwhile
        store.create_run(NewRun(id=f"r-other-{i}", thread_id=thread.id, agent="a", input=None, owner="alice"))
        other = store.claim_step(f"r-other-{i}", "llm:turn:0", owner="w2", lease_ms=60_000)
        assert other.outcome == "claimed"
    store.create_run(NewRun(id="r-done", thread_id=thread.id, agent="a", input=None, owner="alice"))
    claim = store.claim_step("r-done", "tool:noop:c1", owner="w1", lease_ms=60_000)
    store.close()
    sql, params = completion_sql("r-done", "tool:noop:c1", claim.step.generation, 1, '{"ok": true}', [],
                                 None, {}, None, None)
    dsn = sa.engine.make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:  # a transaction, rolled back: EXPLAIN ANALYZE runs the update
        execute = _generic_execute(conn, "done", sql, params)
        explained = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {execute}").fetchone()
        conn.rollback()
    assert explained is not None
    scans = [node for node in _steps_scans(explained[0][0]["Plan"]) if node["Node Type"].endswith("Scan")]
    assert scans, explained
    for scan in scans:
        assert scan.get("Index Name") == "agent_steps_pkey", scan
        assert scan.get("Rows Removed by Filter", 0) == 0, scan
    updated = [node for node in _nodes(explained[0][0]["Plan"]) if node.get("Operation") == "Update"
               and node.get("Relation Name") == "agent_steps"]
    assert updated and updated[0].get("Actual Rows") == 1, updated  # the fence held: it was recorded
