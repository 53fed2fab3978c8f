"""The database restarts (or crashes) under a run on a real Celery worker; the run finishes exactly once.

The shared PostgreSQL on 5432 serves other suites, so these tests restart a private instance
(``pg_private.PrivatePostgres``), started once for the module. The worker has ONE pool process, so
while the ``gate`` tool of a turn is in flight its sibling calls provably wait, unclaimed, in the broker:

1. mid-tool: ``pg_ctl restart`` while ``tool:gate:g1`` runs (``a1``/``a2`` queued behind it) — every
   pooled connection of worker and test is now dead; the gate then finishes and records its result;
2. across steps: the server goes down while ``tool:gate:g2`` runs, the gate then finishes, and its
   completion AND the first deliveries of the queued ``a3``/``a4`` all meet a dead database (Celery
   retries them with backoff) before the server comes back.

Both with ``-m fast`` (clean shutdown) and ``-m immediate`` (a crash: WAL replay on start).
"""

from __future__ import annotations

import pytest
from chaos_support import (
    assert_exactly_once,
    chaos_fleet,
    executions,
    llm_calls,
    start_run,
    through_outage,
    wait_for,
    wait_runs,
)
from fleet_support import Fleet
from pg_private import PrivatePostgres
from private_redis import PrivateRedis

pytestmark = [pytest.mark.integration, pytest.mark.slow]

G1, G2 = "tool:gate:g1", "tool:gate:g2"
STEPS = {
    "llm:turn:0", G1, "tool:note:a1", "tool:note:a2",
    "llm:turn:1", G2, "tool:note:a3", "tool:note:a4",
    "llm:turn:2", "tool:note:a5", "llm:turn:3",
}


def _completed(fleet: Fleet, run_id: str) -> set[str]:
    return through_outage(
        lambda: {s.name for s in fleet.app.store.list_steps(run_id) if s.status == "completed"}
    )


def _retries_logged(fleet: Fleet) -> int:
    return sum(w.log().count("retry: Retry in") for w in fleet.workers)


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_run_survives_database_restarts_mid_tool_and_across_steps(
    private_pg: PrivatePostgres, private_pg_url: str, private_redis: PrivateRedis,
    monkeypatch: pytest.MonkeyPatch, mode: str,
) -> None:
    fleet = chaos_fleet(private_pg_url, private_redis, monkeypatch)
    try:
        fleet.start_worker(concurrency=1, loglevel="INFO")  # INFO: Celery logs each retry it schedules
        run_id, tag = start_run(fleet, "dbchaos")

        # 1. Restart while g1 is mid-tool; a1 and a2 wait in the broker, unclaimed.
        assert fleet.wait_entered(1, timeout=60) == [G1]
        assert _completed(fleet, run_id) == {"llm:turn:0"}
        assert executions(fleet, run_id) == {G1: 1}
        private_pg.restart(mode)
        fleet.counters.set(f"{fleet.prefix}:open:{G1}", "1")

        # 2. Down while g2 is mid-tool; its completion and a3/a4's first deliveries meet no database.
        assert fleet.wait_entered(2, timeout=60)[1] == G2, fleet.explain(run_id)
        assert _completed(fleet, run_id) == {"llm:turn:0", G1, "tool:note:a1", "tool:note:a2", "llm:turn:1"}
        assert executions(fleet, run_id).keys() == {G1, "tool:note:a1", "tool:note:a2", G2}
        retries_before = _retries_logged(fleet)
        private_pg.stop(mode)
        try:
            fleet.counters.set(f"{fleet.prefix}:open:{G2}", "1")
            wait_for(lambda: G2 in fleet.counters.lrange(f"{fleet.prefix}:left", 0, -1), 30, "g2 to leave")
            # g2's completion, a3 and a4 each fail on the dead database and are scheduled for a retry.
            wait_for(lambda: _retries_logged(fleet) >= retries_before + 3, 30,
                     f"three retries during the outage\n{fleet.logs()}")
            # ... and the worker has taken every message off the queue (retries wait in it, with an ETA).
            wait_for(lambda: fleet.broker.llen(fleet.queue) == 0, 30, f"the queue to drain\n{fleet.logs()}")
        finally:
            private_pg.start()

        with fleet.sweeping(every=0.5) as tick:
            runs = wait_runs(fleet, [run_id], timeout=90, tick=tick)
        assert runs[run_id].status == "completed", fleet.explain(run_id)

        steps = assert_exactly_once(
            fleet, run_id, tag, expected_steps=STEPS, turns=4, tool_messages=7, final_text="durable",
            context=private_pg.server_log(),
        )
        # Only g2, whose result met a dead database, may have been claimed (and run) again.
        assert {n: s.attempt for n, s in steps.items() if n != G2} == dict.fromkeys(STEPS - {G2}, 1)
        ran = executions(fleet, run_id)
        assert steps[G2].attempt in (1, 2) and ran[G2] == steps[G2].attempt, fleet.explain(run_id)
        assert {k: v for k, v in ran.items() if k != G2} == dict.fromkeys(
            {n for n in STEPS if n.startswith("tool:")} - {G2}, 1
        )
        # No model turn was paid for twice.
        assert llm_calls(fleet) == {f"{tag}:{turn}": 1 for turn in range(4)}
    finally:
        fleet.close()
