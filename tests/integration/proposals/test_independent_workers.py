"""Independent action approvals on real Celery workers (a private Redis broker + PostgreSQL).

Checked: a run proposes, keeps going and finishes on a worker; an approval made elsewhere executes
the tool once; a worker SIGKILLed mid-execution is recovered by beat's tick within a bound (same
idempotency key, one effect, one outcome message); a rejection delivers a rejection message; two
workers never execute one proposal.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from proposal_fleet import LEASE_MS, ProposalFleet

from lunora_jobs.engine.actions import OUTCOME_KIND
from lunora_jobs.store.proposals import ActionProposal

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RECOVERY_BOUND_S = LEASE_MS / 1000 + 10
"""A killed worker's proposal runs again within its lease plus a few beat ticks and a worker start."""


def _propose(fleet: ProposalFleet, thread: str, amount: int = 9000) -> ActionProposal:
    handle = fleet.app.agents.payer.run(input=f"charge {amount} and note {thread}", thread_key=thread,
                                        owner="u7")
    run = fleet.wait_status(handle.id, "completed", "failed")
    assert run.status == "completed", fleet.logs()
    assert run.result["text"].startswith("saw: The action 'charge_card' needs a human decision")
    [proposal] = fleet.app.proposals.list(thread, actor="u7")
    return proposal


def _outcomes(fleet: ProposalFleet, thread: str) -> list[str]:
    return [str(m.content) for m in fleet.app.threads.messages(thread, viewer="u7")
            if (m.metadata or {}).get("kind") == OUTCOME_KIND]


def _settled(fleet: ProposalFleet, thread: str, proposal_id: str) -> ActionProposal | None:
    p = fleet.app.proposals.get(thread, proposal_id, actor="u7")
    return p if p.status in ("succeeded", "failed") else None


def test_a_run_proposes_and_finishes_and_an_approval_executes_the_tool_once(fleet: ProposalFleet) -> None:
    fleet.start_worker()
    proposal = _propose(fleet, "t-approve")
    assert fleet.redis.llen(fleet.key("attempts")) == 0
    assert fleet.app.proposals.decide("t-approve", proposal.id, approve=True, actor="u7") == "applied"
    done = fleet.wait_for("the proposal to settle", lambda: _settled(fleet, "t-approve", proposal.id), 30)
    assert (done.status, done.generation) == ("succeeded", 1)
    assert fleet.redis.lrange(fleet.key("effects"), 0, -1) == [proposal.idempotency_key]
    assert fleet.redis.llen(fleet.key("attempts")) == 1
    assert len(_outcomes(fleet, "t-approve")) == 1


def test_a_rejection_delivers_a_rejection_message(fleet: ProposalFleet) -> None:
    fleet.start_worker()
    proposal = _propose(fleet, "t-reject")
    fleet.app.proposals.decide("t-reject", proposal.id, approve=False, actor="u7", reason="not today")
    assert _outcomes(fleet, "t-reject") == [
        f"Action proposal {proposal.id} ('charge_card') was rejected by a human reviewer: not today"
    ]
    assert fleet.app.work_proposals().executed == []  # nothing is claimable: a rejection never runs
    assert fleet.app.proposals.get("t-reject", proposal.id, actor="u7").status == "rejected"
    assert fleet.redis.llen(fleet.key("attempts")) == 0


def test_a_worker_killed_mid_execution_is_recovered_and_the_charge_happens_once(
    fleet: ProposalFleet, tmp_path: Path,
) -> None:
    fleet.redis.set(fleet.key("block"), "1")
    victim = fleet.start_worker(concurrency=1)
    proposal = _propose(fleet, "t-kill")
    fleet.app.proposals.decide("t-kill", proposal.id, approve=True, actor="u7")
    fleet.wait_for("the charge to start", lambda: fleet.redis.llen(fleet.key("entered")) == 1, 30)
    # The rest of the fleet is up before the kill (a machine crash does not wait for a deploy).
    fleet.start_worker()
    ticked = tmp_path / "beat-ticked"
    fleet.start_beat(heartbeat_file=ticked)
    fleet.wait_for("beat's first tick", ticked.exists, 60)
    victim.kill()
    killed_at = time.monotonic()
    fleet.redis.rpush(fleet.key("release"), "go")  # the recovered execution may finish
    done = fleet.wait_for("the recovered proposal to settle",
                          lambda: _settled(fleet, "t-kill", proposal.id), RECOVERY_BOUND_S + 30)
    recovered_in = time.monotonic() - killed_at
    print(f"proposal recovered {recovered_in:.1f}s after the SIGKILL (bound {RECOVERY_BOUND_S}s)")
    assert recovered_in <= RECOVERY_BOUND_S, f"recovered in {recovered_in:.1f}s"
    assert (done.status, done.generation) == ("succeeded", 2), (done.error, fleet.logs())
    attempts = fleet.redis.lrange(fleet.key("attempts"), 0, -1)
    assert [a.split("|")[0] for a in attempts] == [proposal.idempotency_key] * 2
    assert attempts[0].split("|")[1] != attempts[1].split("|")[1]  # two processes, one key
    assert fleet.redis.lrange(fleet.key("effects"), 0, -1) == [proposal.idempotency_key]
    assert len(_outcomes(fleet, "t-kill")) == 1


def test_two_workers_never_execute_one_proposal(fleet: ProposalFleet) -> None:
    fleet.start_worker()
    fleet.start_worker()
    fleet.start_beat()  # its ticks drain the queue too: more claimers racing for the same rows
    threads = [f"t-many-{i}" for i in range(8)]
    proposals = {t: _propose(fleet, t, 6000 + i) for i, t in enumerate(threads)}
    for thread, proposal in proposals.items():
        fleet.app.proposals.decide(thread, proposal.id, approve=True, actor="u7")
    for thread, proposal in proposals.items():
        fleet.wait_for(f"{thread} to settle", lambda t=thread, p=proposal: _settled(fleet, t, p.id), 60)
    attempts = [a.split("|")[0] for a in fleet.redis.lrange(fleet.key("attempts"), 0, -1)]
    assert sorted(attempts) == sorted(p.idempotency_key for p in proposals.values())
    for thread in threads:
        assert len(_outcomes(fleet, thread)) == 1
