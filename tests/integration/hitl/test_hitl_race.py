"""Twenty processes start a run on one thread at the same instant: exactly one owns it.

``slowstart`` resolves its instructions slowly, between taking the thread and writing its run row:
the window in which a loser sees a slot whose run does not exist yet, and must not free it.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter

import pytest
from hitl_fleet import HitlFleet
from race_starts import start_worker

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CONTENDERS = 20


@pytest.mark.timeout(600)  # twenty interpreters to spawn on a machine that may be busy
@pytest.mark.parametrize("agent", ["payer", "slowstart"])
def test_twenty_simultaneous_runs_from_separate_processes_yield_one_owner(
    fleet: HitlFleet, agent: str
) -> None:
    key = f"t-race-{agent}"
    fleet.app.store.ensure_thread(key, owner="u7")  # the row exists: they race for the slot only
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(CONTENDERS), ctx.Queue()
    procs = [
        ctx.Process(target=start_worker, args=(key, agent, i, barrier, results)) for i in range(CONTENDERS)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=280) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    kinds = Counter(kind for kind, _ in outcomes)
    assert kinds == {"owner": 1, "conflict": CONTENDERS - 1}, outcomes
    winner = next(detail for kind, detail in outcomes if kind == "owner")
    thread = fleet.app.threads.get(key, viewer="u7")
    assert thread.active_run_id == winner
    # The losers left nothing behind: one run, one user message.
    assert [r.id for r in fleet.app.store.list_runs(thread_id=thread.id)] == [winner]
    assert [m.role for m in fleet.app.threads.messages(key, viewer="u7")] == ["user"]
    # And the owner runs to the end on a real worker.
    fleet.start_worker()
    fleet.wait_for("the owner's tool to start", lambda: fleet.redis.llen(fleet.key("entered")) == 1)
    fleet.release()
    assert fleet.wait_status(winner, "completed", "failed").status == "completed"
    assert fleet.app.threads.get(key, viewer="u7").active_run_id is None
