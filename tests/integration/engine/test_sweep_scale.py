"""The sweep at scale: 10,000 runs in the database, most of them hibernated, 20 with lost messages.

A tick finds what is stalled with a fixed number of indexed queries (``store.due_outbox``,
``lapsed_steps``, ``quiet_runs``, ``parked_runs_to_wake``, ``queued_threads``), then reads only the
stalled runs.
Checked on PostgreSQL:

- with nothing stalled, a tick issues ``IDLE_TICK_QUERIES`` statements, with 10,000 runs as with none;
- 20 stalled runs (10 whose start message was lost, 10 whose worker died mid-turn, leaving a lapsed
  lease) are all re-dispatched by the first tick after their grace period (the lapsed ones at once),
  and the tick's statements grow with those 20 only;
- hibernated runs waiting on an approval are never read, however many there are.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from engine_it_support import FakeClock, RecordingDispatcher, count_statements, weather_agent, weather_stub

from lunora_jobs import Lunora, ScriptedModel, final_turn
from lunora_jobs.engine.locks import LocalLock
from lunora_jobs.store import SqlStore, create_store
from lunora_jobs.store.records import NewRun
from lunora_jobs.store.schema import runs, steps, threads, tool_calls

pytestmark = pytest.mark.integration

HIBERNATED = 9_960
HEALTHY = 20
LOST = 10
KILLED = 10
GRACE_MS = 30_000
IDLE_TICK_QUERIES = 6
"""due_outbox, lapsed_steps, quiet_runs (running), parked_runs_to_wake, the memory writes,
queued_threads (the declarations and the undeclared runs are read a few times per
``LUNORA_UNKNOWN_AGENT_S`` only, not on these ticks)."""


@pytest.fixture
def parts(pg_url: str) -> Iterator[tuple[SqlStore, FakeClock]]:
    clock = FakeClock(start=10_000_000)
    store = create_store(pg_url, clock=clock)
    store.ensure_tables()
    yield store, clock
    store.close()


def _bulk(store: SqlStore, now: int) -> None:
    """HIBERNATED parked runs (each with a call awaiting approval) and HEALTHY running ones whose
    step holds a live lease, inserted in bulk."""
    thread_rows, run_rows, call_rows, step_rows = [], [], [], []
    for i in range(HIBERNATED + HEALTHY):
        tid, rid = f"th-{i}", f"run-{i:05d}"
        parked = i < HIBERNATED
        thread_rows.append({"id": tid, "key": f"k-{i}", "owner": "u", "status": "awaiting_input" if parked
                            else "running", "created_at": now - 3_600_000, "updated_at": now - 3_600_000})
        run_rows.append({"id": rid, "thread_id": tid, "agent": "support", "owner": "u",
                         "status": "awaiting_input" if parked else "running", "input": '"hi"', "turns": 1,
                         "created_at": now - 3_600_000, "updated_at": now - (3_600_000 if parked else 1_000)})
        if parked:
            call_rows.append({"run_id": rid, "id": "c1", "thread_id": tid, "name": "pay", "input": "{}",
                              "status": "awaiting_approval", "created_at": now - 3_600_000,
                              "updated_at": now - 3_600_000})
        else:
            step_rows.append({"run_id": rid, "name": "llm:turn:1", "status": "running", "attempt": 1,
                              "generation": 1, "lease_owner": "w", "lease_expires_at": now + 600_000,
                              "created_at": now - 1_000, "updated_at": now - 1_000})
    with store.engine.begin() as conn:
        tables = ((threads, thread_rows), (runs, run_rows), (tool_calls, call_rows), (steps, step_rows))
        for table, rows in tables:
            conn.execute(sa.insert(table), rows)


def test_a_tick_costs_a_fixed_number_of_queries_and_recovers_every_stalled_run(
    parts: tuple[SqlStore, FakeClock],
) -> None:
    store, clock = parts
    dispatcher = RecordingDispatcher()
    app = Lunora([weather_agent()], store=store, dispatcher=dispatcher, lock=LocalLock(),
                 model=ScriptedModel([final_turn("ok")] * 10), functions={"weather:lookup": weather_stub})
    _bulk(store, clock.now)
    lost = [app.agents.support.run(input="hi", thread_key=f"lost-{uuid.uuid4().hex[:6]}").id
            for _ in range(LOST)]
    killed = []
    for i in range(KILLED):
        thread = store.ensure_thread(f"killed-{i}", owner=None)
        store.create_run(NewRun(id=f"killed-{i}", thread_id=thread.id, agent="support", input="hi"))
        claim = store.claim_step(f"killed-{i}", "llm:turn:0", owner="dead", lease_ms=6_000)
        assert claim.outcome == "claimed"
        killed.append(f"killed-{i}")
    dispatcher.tasks.clear()  # every message of these 20 runs is lost
    total = store.engine.connect().execute(sa.select(sa.func.count()).select_from(runs)).scalar_one()
    assert total == HIBERNATED + HEALTHY + LOST + KILLED == 10_000

    app.sweep(grace_ms=GRACE_MS)  # first use: the memory rows check their tables once per store
    with count_statements(store.engine) as idle:  # nothing stalled yet: the leases are live, all recent
        report = app.sweep(grace_ms=GRACE_MS)
    assert report.scanned == 0 and report.dispatched == [] and len(idle) == IDLE_TICK_QUERIES, idle

    clock.advance(6_000)  # the dead worker's leases lapse: taken over at the next tick, no grace
    with count_statements(store.engine) as lapsed_tick:
        report = app.sweep(grace_ms=GRACE_MS)
    assert sorted(t.run_id for t in report.dispatched) == sorted(killed), report
    assert {t.step for t in report.dispatched} == {"llm:turn:0"}

    clock.advance(GRACE_MS)  # the lost start messages: due one grace period after the start
    dispatcher.tasks.clear()
    started = time.perf_counter()
    with count_statements(store.engine) as stalled_tick:
        report = app.sweep(grace_ms=GRACE_MS)
    tick_ms = (time.perf_counter() - started) * 1000
    assert set(lost) <= {t.run_id for t in report.dispatched}, report
    # The healthy runs (live leases) were examined once they were quiet for a grace period, and the
    # hibernated ones were never read: the statements grow with the examined runs only.
    per_run = (len(stalled_tick) - IDLE_TICK_QUERIES) / max(report.scanned, 1)
    assert report.scanned <= LOST + KILLED + HEALTHY and per_run <= 3, (report.scanned, stalled_tick)
    print(f"\nsweep at 10,000 runs ({HIBERNATED} hibernated): idle tick {len(idle)} queries; "
          f"lapsed tick {len(lapsed_tick)} queries for {KILLED} runs; stalled tick {len(stalled_tick)} "
          f"queries for {report.scanned} examined runs in {tick_ms:.0f} ms")

    dispatcher.tasks.clear()
    with count_statements(store.engine) as after:  # everything examined was touched: quiet again
        report = app.sweep(grace_ms=GRACE_MS)
    assert report.scanned == KILLED and len(after) <= IDLE_TICK_QUERIES + 3 * KILLED, after
