"""The hot path on PostgreSQL: database round trips and wall time of claim_step + complete_step.

Prints the measurement (run with ``-s`` to see it) and pins the round trips, counted on the wire
(``bench/rtproxy.py``: the hot path's statements go to psycopg directly, past SQLAlchemy's events),
so a change that adds a round trip to every step shows up as a failing test rather than a slower fleet.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from lunora_jobs.store import NewMessage, NewRun, SqlStore, StepCompletion, UsageEntry

# Appended, not prepended: bench/rag.py must never shadow the ``rag`` package for later imports.
sys.path.append(str(Path(__file__).resolve().parents[3] / "bench"))
from rtproxy import RoundTripProxy

pytestmark = pytest.mark.integration


def test_claim_and_complete_round_trips_and_wall_time(pg_url: str) -> None:
    url = sa.engine.make_url(pg_url)
    relay = RoundTripProxy(url.host or "127.0.0.1", url.port or 5432).start()
    store = SqlStore.from_url(url.set(port=relay.port).render_as_string(hide_password=False))
    thread = store.ensure_thread("t1", owner="alice")
    store.create_run(NewRun(id="r1", thread_id=thread.id, agent="a", input=None, owner="alice"))
    counts = {"statements": 0, "transactions": 0, "checkouts": 0, "round_trips": 0}
    sa.event.listen(
        store.engine,
        "before_cursor_execute",
        lambda *a: counts.__setitem__("statements", counts["statements"] + 1),
    )
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
    started, trips = time.perf_counter(), relay.count()
    for i in range(20, 20 + n):
        one(i)
    elapsed = time.perf_counter() - started
    counts["round_trips"] = relay.count() - trips
    per_step = {k: v / n for k, v in counts.items()}
    print(
        f"\nclaim_step + complete_step on PostgreSQL (through a counting relay), {n} steps: "
        f"{elapsed / n * 1000:.2f} ms per step; round trips/step={per_step['round_trips']:.1f} "
        f"SQLAlchemy statements/step={per_step['statements']:.1f} "
        f"transactions/step={per_step['transactions']:.1f} "
        f"pool checkouts (pre-ping = a socket poll)/step={per_step['checkouts']:.1f}; "
        f"of which claim_step {claim_time[0] / n * 1000:.2f} ms"
    )
    # claim: 1 autocommit upsert (no BEGIN/COMMIT); complete: ONE autocommit statement whose
    # data-modifying CTEs update the step, the thread (seq + totals) and the run and insert the
    # messages and the usage row (see store/sql/_postgres/completion.py) — two round trips per step in all.
    assert per_step["round_trips"] == 2
    assert per_step["statements"] <= 1  # the claim through SQLAlchemy; the completion goes to psycopg
    assert per_step["transactions"] == 0
    run = store.get_run("r1")
    assert run is not None and run.turns == 20 + n
    assert len(store.list_messages(thread.id)) == 20 + n
    store.close()
    relay.stop()
