"""The ``ActionProposalStore`` contract, run against every store: memory, SQLite, PostgreSQL, MariaDB.

Time is an injected clock, so lease expiry and recovery are exact; the races use real threads and,
on SQL, real OS processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from lunora_jobs.errors import ConflictError, IdentityTooLongError, NotFoundError
from lunora_jobs.store.memory import InMemoryProposalStore
from lunora_jobs.store.proposals import (
    ActionProposal,
    ActionProposalStore,
    NewActionProposal,
    ProposalLease,
    ProposalScope,
    action_proposal_id,
    default_idempotency_key,
)
from lunora_jobs.store.schema import action_proposals, metadata, threads
from lunora_jobs.store.sql import SqlProposalStore, create_engine
from lunora_jobs.testing import FakeClock

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000
THREAD = "thread-1"
SCOPE = ProposalScope(tenant_ref=None, actor_ref="alice", thread_id=THREAD)
RACE_WORKER = Path(__file__).with_name("race_worker.py")




@dataclass
class Harness:
    """A store under test, its clock, and how to make a thread exist (SQL has a foreign key)."""

    store: ActionProposalStore
    clock: FakeClock
    url: str | None
    engine: sa.Engine | None

    def thread(self, thread_id: str) -> None:
        if self.engine is None:
            return
        with self.engine.begin() as conn:
            conn.execute(threads.insert().values(id=thread_id, key=thread_id, created_at=T0, updated_at=T0))

    def propose(self, call_id: str = "call-1", scope: ProposalScope = SCOPE, **kw: object) -> ActionProposal:
        new = NewActionProposal(
            scope=scope,
            call_id=call_id,
            tool_name=str(kw.pop("tool_name", "charge_card")),
            input=kw.pop("input", {"amount": 9000, "currency": "EUR"}),
            card=kw.pop("card", {"title": "Charge 9000 EUR"}),
            **kw,  # type: ignore[arg-type]
        )
        return self.store.create_action_proposal(new)

    def approved(self, call_id: str = "call-1", scope: ProposalScope = SCOPE) -> ActionProposal:
        p = self.propose(call_id, scope)
        result = self.store.decide_action_proposal(scope, p.id, "approved", decided_by=scope.actor_ref)
        assert result.outcome == "applied"
        assert result.proposal is not None
        return result.proposal


BACKENDS = ["memory", "sqlite", "postgres", "mariadb"]
URL_FIXTURE = {"sqlite": "sqlite_url", "postgres": "pg_url", "mariadb": "mysql_url"}


@pytest.fixture(params=BACKENDS)
def h(request: pytest.FixtureRequest) -> Iterator[Harness]:
    clock = FakeClock()
    if request.param == "memory":
        yield Harness(InMemoryProposalStore(clock=clock), clock, None, None)
        return
    url: str = request.getfixturevalue(URL_FIXTURE[request.param])
    engine = create_engine(url)
    # Only the two tables this capability touches: a fresh database per test stays cheap.
    metadata.create_all(engine, tables=[threads, action_proposals])
    harness = Harness(SqlProposalStore(engine, clock=clock, auto_create_tables=False), clock, url, engine)
    harness.thread(THREAD)
    try:
        yield harness
    finally:
        engine.dispose()


# -- create ----------------------------------------------------------------------------------


def test_create_is_deterministic_idempotent_and_snapshots(h: Harness) -> None:
    card = {"title": "Charge", "lines": ["a", "b"]}
    p = h.propose(card=card, run_id="run-1", ttl_ms=60_000)
    card["title"] = "mutated after create"  # the snapshot must not follow the caller's object

    assert isinstance(h.store, ActionProposalStore)
    assert p.id == action_proposal_id(SCOPE, "call-1")
    assert p.idempotency_key == default_idempotency_key(p.id)
    assert (p.status, p.decision, p.generation, p.version) == ("pending", None, 0, 1)
    assert (p.created_at, p.expires_at, p.run_id) == (T0, T0 + 60_000, "run-1")

    h.clock.advance(5_000)
    again = h.propose(card={"lines": ["a", "b"], "title": "Charge"}, run_id="run-1", ttl_ms=60_000)
    assert again == p  # same id, same key, same created_at: the original row
    fetched = h.store.get_action_proposal(SCOPE, p.id)
    assert fetched is not None
    assert fetched.card == {"title": "Charge", "lines": ["a", "b"]}
    assert fetched.input == {"amount": 9000, "currency": "EUR"}
    assert fetched == p

    with pytest.raises(ConflictError):
        h.propose(card=card, run_id="run-1")  # same call id, different snapshot
    with pytest.raises(ConflictError):
        h.propose(input={"amount": 1}, card={"title": "Charge", "lines": ["a", "b"]}, run_id="run-1")

    other = h.propose(scope=ProposalScope("acme", "alice", THREAD))
    assert other.id != p.id  # the id is per scope
    custom = h.propose("call-2", idempotency_key="billing:charge:42")
    assert custom.idempotency_key == "billing:charge:42"


def test_create_on_a_missing_thread_is_refused_by_sql(h: Harness) -> None:
    if h.engine is None:
        pytest.skip("the in-memory twin has no thread table")
    with pytest.raises(NotFoundError):
        h.propose(scope=ProposalScope(None, "alice", "no-such-thread"))


def test_identity_fields_are_limited_to_255(h: Harness) -> None:
    long, ok = "x" * 256, "y" * 255
    bad_scopes = [ProposalScope(long, "alice", THREAD), ProposalScope(None, long, THREAD)]
    bad_scopes.append(ProposalScope(None, "alice", long))
    for scope in bad_scopes:
        with pytest.raises(IdentityTooLongError):
            h.propose(scope=scope)
        with pytest.raises(IdentityTooLongError):
            h.store.list_action_proposals(scope)
        with pytest.raises(IdentityTooLongError):
            h.store.get_action_proposal(scope, "ap_x")
    with pytest.raises(IdentityTooLongError):
        h.propose(tool_name=long)
    with pytest.raises(IdentityTooLongError):
        h.propose(idempotency_key=long)
    with pytest.raises(IdentityTooLongError):
        h.propose(run_id=long)
    with pytest.raises(IdentityTooLongError):
        h.propose(long)

    p = h.propose(ok, scope=ProposalScope(ok, ok, THREAD), tool_name=ok, idempotency_key=ok)
    scope = p.scope
    assert (p.tenant_ref, p.actor_ref, p.call_id, p.idempotency_key) == (ok, ok, ok, ok)
    with pytest.raises(IdentityTooLongError):
        h.store.decide_action_proposal(scope, p.id, "approved", decided_by=long)
    assert h.store.decide_action_proposal(scope, p.id, "approved", decided_by=ok).outcome == "applied"
    with pytest.raises(IdentityTooLongError):
        h.store.claim_action_proposal(scope, p.id, worker_id=long, lease_ms=1000)
    with pytest.raises(IdentityTooLongError):
        h.store.claim_next_action_proposal(long, 1000)
    lease = h.store.claim_action_proposal(scope, p.id, worker_id=ok, lease_ms=1000).lease
    assert lease is not None and lease.proposal.lease_owner == ok


# -- scope -----------------------------------------------------------------------------------


def test_every_operation_outside_the_scope_is_not_found(h: Harness) -> None:
    tenant_scope = ProposalScope("acme", "alice", THREAD)
    h.thread("thread-2")
    p = h.approved(scope=tenant_scope)
    lease = h.store.claim_action_proposal(tenant_scope, p.id, worker_id="w", lease_ms=10_000).lease
    assert lease is not None
    strangers = [
        ProposalScope(None, "alice", THREAD),  # tenant omitted is not a wildcard
        ProposalScope("other", "alice", THREAD),
        ProposalScope("acme", "bob", THREAD),
        ProposalScope("acme", "ALICE", THREAD),  # case-sensitive on every dialect
        ProposalScope("acme", "alice ", THREAD),  # MySQL PAD SPACE must not leak
        ProposalScope("acme", "alice", "thread-2"),
    ]
    for scope in strangers:
        assert h.store.get_action_proposal(scope, p.id) is None, scope
        assert h.store.list_action_proposals(scope) == [], scope
        decided = h.store.decide_action_proposal(scope, p.id, "rejected", decided_by="bob")
        assert (decided.outcome, decided.proposal) == ("not_found", None), scope
        assert h.store.claim_action_proposal(scope, p.id, worker_id="w2", lease_ms=1).outcome == "not_found"
        renew = h.store.renew_action_proposal_lease(scope, p.id, lease.token, lease.generation, lease_ms=1)
        assert renew.outcome == "not_found", scope
        settle = h.store.settle_action_proposal(scope, p.id, lease.token, lease.generation, "succeeded")
        assert settle == "not_found", scope
    # Nothing a stranger did reached the row.
    assert h.store.get_action_proposal(tenant_scope, p.id) == lease.proposal
    missing = h.store.decide_action_proposal(tenant_scope, "ap_missing", "approved", decided_by="alice")
    assert missing.outcome == "not_found"


# -- decisions ---------------------------------------------------------------------------------


def test_decide_outcomes_and_the_original_audit_is_kept(h: Harness) -> None:
    p = h.propose(ttl_ms=60_000)
    h.clock.advance(1_000)
    first = h.store.decide_action_proposal(SCOPE, p.id, "approved", decided_by="alice", reason="ok")
    assert first.outcome == "applied"
    assert first.proposal is not None
    audit = first.proposal
    # The decision time is the store's clock; approval queues the work in the same row.
    assert (audit.status, audit.decision, audit.decided_by, audit.decided_at) == (
        "queued", "approved", "alice", T0 + 1_000,
    )
    assert audit.decision_reason == "ok"

    h.clock.advance(1_000)
    repeat = h.store.decide_action_proposal(SCOPE, p.id, "approved", decided_by="mallory", reason="again")
    assert repeat.outcome == "unchanged"
    assert repeat.proposal == audit  # who, when and why are the first decider's
    conflict = h.store.decide_action_proposal(SCOPE, p.id, "rejected", decided_by="bob")
    assert conflict.outcome == "conflict"
    assert conflict.proposal == audit
    h.clock.advance(120_000)  # past the ttl: a decided proposal does not expire
    assert h.store.decide_action_proposal(SCOPE, p.id, "approved", decided_by="x").outcome == "unchanged"

    r = h.propose("call-r")
    rejected = h.store.decide_action_proposal(SCOPE, r.id, "rejected", decided_by="alice")
    assert rejected.outcome == "applied"
    assert rejected.proposal is not None and rejected.proposal.status == "rejected"
    assert h.store.claim_action_proposal(SCOPE, r.id, worker_id="w", lease_ms=1000).outcome == "not_claimable"

    with pytest.raises(ValueError):
        h.store.decide_action_proposal(SCOPE, r.id, "maybe", decided_by="alice")  # type: ignore[arg-type]


def test_decide_after_the_deadline_is_expired(h: Harness) -> None:
    p = h.propose(ttl_ms=1_000)
    h.clock.advance(999)
    assert h.store.get_action_proposal(SCOPE, p.id) is not None
    h.clock.advance(1)
    late = h.store.decide_action_proposal(SCOPE, p.id, "approved", decided_by="alice")
    assert late.outcome == "expired"
    assert late.proposal is not None
    assert (late.proposal.status, late.proposal.decision, late.proposal.decided_at) == ("expired", None, None)
    again = h.store.decide_action_proposal(SCOPE, p.id, "rejected", decided_by="alice")
    assert again.outcome == "expired"
    assert h.store.claim_action_proposal(SCOPE, p.id, worker_id="w", lease_ms=1).outcome == "not_claimable"
    assert h.store.claim_next_action_proposal("w", 1000) is None


# -- lists -------------------------------------------------------------------------------------


def test_list_filters_order_and_limit_bounds(h: Harness) -> None:
    ids = [h.propose(f"call-{i}", ttl_ms=10_000 if i == 4 else None).id for i in range(5)]
    for i, pid in enumerate(ids):
        h.clock.advance(1)  # distinct created_at is not required, but decisions happen later
        if i in (0, 1):
            h.store.decide_action_proposal(SCOPE, pid, "approved", decided_by="alice")
        if i == 2:
            h.store.decide_action_proposal(SCOPE, pid, "rejected", decided_by="alice")
    h.clock.advance(10_000)
    assert h.store.expire_action_proposals() == [ids[4]]

    def listed(**kw: object) -> list[str]:
        return [p.id for p in h.store.list_action_proposals(SCOPE, **kw)]  # type: ignore[arg-type]

    assert set(listed()) == set(ids)
    assert set(listed(decision="approved")) == {ids[0], ids[1]}
    assert listed(decision="rejected") == [ids[2]]
    assert listed(decision="pending") == [ids[3]]
    assert listed(decision="expired") == [ids[4]]
    assert len(listed(limit=2)) == 2
    assert len(listed(limit=1000)) == 5
    for bad in (0, 1001, -1):
        with pytest.raises(ValueError):
            h.store.list_action_proposals(SCOPE, limit=bad)
    with pytest.raises(ValueError):
        h.store.list_action_proposals(SCOPE, decision="maybe")  # type: ignore[arg-type]


def test_list_defaults_to_100_oldest_first(h: Harness) -> None:
    for i in range(101):
        h.clock.advance(1)
        h.propose(f"call-{i:03d}")
    listed = h.store.list_action_proposals(SCOPE)
    assert len(listed) == 100
    assert [p.call_id for p in listed] == [f"call-{i:03d}" for i in range(100)]


# -- leases ------------------------------------------------------------------------------------


def test_claim_renew_settle_need_token_generation_and_a_live_lease(h: Harness) -> None:
    pending = h.propose("call-pending")
    early = h.store.claim_action_proposal(SCOPE, pending.id, worker_id="w", lease_ms=1)
    assert early.outcome == "not_claimable"
    p = h.approved()
    claim = h.store.claim_action_proposal(SCOPE, p.id, worker_id="w1", lease_ms=10_000)
    assert claim.outcome == "claimed" and claim.lease is not None
    lease = claim.lease
    assert (lease.generation, lease.worker_id, lease.expires_at) == (1, "w1", T0 + 10_000)
    assert lease.idempotency_key == p.idempotency_key and len(lease.token) >= 32
    assert (lease.proposal.status, lease.proposal.lease_owner) == ("executing", "w1")
    busy = h.store.claim_action_proposal(SCOPE, p.id, worker_id="w2", lease_ms=10_000)
    assert (busy.outcome, busy.lease) == ("busy", None)
    assert h.store.claim_next_action_proposal("w2", 10_000) is None

    renew = h.store.renew_action_proposal_lease
    assert renew(SCOPE, p.id, "forged", lease.generation, lease_ms=1).outcome == "lost"
    assert renew(SCOPE, p.id, lease.token, lease.generation + 1, lease_ms=1).outcome == "lost"
    h.clock.advance(4_000)
    renewed = renew(SCOPE, p.id, lease.token, lease.generation, lease_ms=10_000)
    assert (renewed.outcome, renewed.expires_at) == ("renewed", T0 + 14_000)

    settle = h.store.settle_action_proposal
    assert settle(SCOPE, p.id, "forged", 1, "succeeded") == "lost"
    assert settle(SCOPE, p.id, lease.token, 2, "succeeded") == "lost"
    with pytest.raises(ValueError):
        settle(SCOPE, p.id, lease.token, 1, "done")  # type: ignore[arg-type]
    assert settle(SCOPE, p.id, lease.token, 1, "succeeded", result={"charge": "ch_1"}) == "settled"
    assert settle(SCOPE, p.id, lease.token, 1, "failed", error="late retry") == "unchanged"
    done = h.store.get_action_proposal(SCOPE, p.id)
    assert done is not None
    assert (done.status, done.result, done.error) == ("succeeded", {"charge": "ch_1"}, None)
    assert done.settled_at == T0 + 4_000
    assert (done.lease_owner, done.lease_expires_at) == (None, None)
    assert renew(SCOPE, p.id, lease.token, 1, lease_ms=1).outcome == "lost"
    assert h.store.claim_action_proposal(SCOPE, p.id, worker_id="w", lease_ms=1).outcome == "not_claimable"
    with pytest.raises(ValueError):
        h.store.claim_next_action_proposal("w", 0)


def test_lease_expiry_and_recovery_advance_generation_keep_key(h: Harness) -> None:
    p = h.approved()
    first = h.store.claim_next_action_proposal("w1", 1_000)
    assert first is not None and first.proposal.id == p.id and first.generation == 1
    h.clock.advance(999)
    renew = h.store.renew_action_proposal_lease
    assert renew(SCOPE, p.id, first.token, 1, lease_ms=1_000).outcome == "renewed"  # now expires T0+1999
    h.clock.advance(999)
    assert h.store.claim_next_action_proposal("w2", 1_000) is None  # still live for 1 ms
    h.clock.advance(1)  # expiry is exclusive: at expires_at the lease is gone
    assert renew(SCOPE, p.id, first.token, 1, lease_ms=1_000).outcome == "lost"
    assert h.store.settle_action_proposal(SCOPE, p.id, first.token, 1, "succeeded") == "lost"

    second = h.store.claim_next_action_proposal("w2", 1_000)  # crash recovery
    assert second is not None
    assert (second.proposal.id, second.generation, second.worker_id) == (p.id, 2, "w2")
    assert second.token != first.token
    assert second.idempotency_key == first.idempotency_key == p.idempotency_key
    assert h.store.settle_action_proposal(SCOPE, p.id, first.token, 1, "succeeded") == "lost"

    h.clock.advance(1_000)  # the recovered lease expires too; the scoped claim recovers it
    third = h.store.claim_action_proposal(SCOPE, p.id, worker_id="w3", lease_ms=1_000)
    assert third.outcome == "claimed" and third.lease is not None
    assert third.lease.generation == 3 and third.lease.idempotency_key == p.idempotency_key
    assert h.store.settle_action_proposal(SCOPE, p.id, second.token, 2, "failed") == "lost"
    settled = h.store.settle_action_proposal(SCOPE, p.id, third.lease.token, 3, "failed", error="boom")
    assert settled == "settled"
    final = h.store.get_action_proposal(SCOPE, p.id)
    assert final is not None and (final.status, final.error, final.generation) == ("failed", "boom", 3)


def test_claim_next_discovers_across_scopes_oldest_first(h: Harness) -> None:
    assert h.store.claim_next_action_proposal("w", 1000) is None
    h.propose("pending-only")
    assert h.store.claim_next_action_proposal("w", 1000) is None
    bob = ProposalScope("acme", "bob", THREAD)
    older = h.approved("a", scope=bob)
    h.clock.advance(10)
    newer = h.approved("b")
    got: list[ProposalLease] = []
    while (lease := h.store.claim_next_action_proposal("w", 5_000)) is not None:
        got.append(lease)
    assert [x.proposal.id for x in got] == [older.id, newer.id]
    assert got[0].proposal.scope == bob


# -- expiry sweep ------------------------------------------------------------------------------


def test_expire_is_bounded_and_spares_decided_and_unbounded(h: Harness) -> None:
    ids = []
    for i in range(5):
        ids.append(h.propose(f"call-{i}", ttl_ms=1_000 + i).id)
    forever = h.propose("forever")
    decided = h.propose("decided", ttl_ms=1_000)
    h.store.decide_action_proposal(SCOPE, decided.id, "approved", decided_by="alice")
    assert h.store.expire_action_proposals(limit=10) == []  # nothing is due yet
    h.clock.advance(2_000)
    for bad in (0, 1001):
        with pytest.raises(ValueError):
            h.store.expire_action_proposals(limit=bad)
    assert h.store.expire_action_proposals(limit=2) == ids[:2]  # earliest deadline first
    assert h.store.expire_action_proposals(limit=1000) == ids[2:]
    assert h.store.expire_action_proposals(limit=1000) == []
    statuses = {p.id: p.status for p in h.store.list_action_proposals(SCOPE)}
    assert statuses[forever.id] == "pending" and statuses[decided.id] == "queued"
    assert all(statuses[i] == "expired" for i in ids)


def test_an_expiry_is_announced_once_fenced_on_the_version_it_was_read_with(h: Harness) -> None:
    old = h.propose("old", ttl_ms=1_000)
    late = h.propose("late", ttl_ms=2_000)
    pending = h.propose("pending", ttl_ms=60_000)
    h.clock.advance(1_500)
    assert h.store.expire_action_proposals() == [old.id]
    h.clock.advance(1_000)
    # ``late`` is expired by a decision that came too late, not by the sweep: announced all the same
    assert h.store.decide_action_proposal(SCOPE, late.id, "approved", decided_by="alice").outcome == "expired"
    assert h.store.unannounced_expired_proposals(T0, limit=1000) == h.store.unannounced_expired_proposals(T0)
    due = h.store.unannounced_expired_proposals(T0)
    assert [p.id for p in due] == [old.id, late.id] and all(p.settled_at is None for p in due)
    assert [p.id for p in h.store.unannounced_expired_proposals(T0 + 1_500)] == [late.id]  # window
    assert [p.id for p in h.store.unannounced_expired_proposals(T0, limit=1)] == [old.id]
    with pytest.raises(ValueError):
        h.store.unannounced_expired_proposals(T0, limit=0)
    assert h.store.mark_expiry_announced(due[0]) is True
    assert h.store.mark_expiry_announced(due[0]) is False  # read before the mark: fenced out
    assert [p.id for p in h.store.unannounced_expired_proposals(T0)] == [late.id]
    stored = h.store.get_action_proposal(SCOPE, old.id)
    assert stored is not None and stored.settled_at == h.clock() and stored.status == "expired"
    assert stored.version == due[0].version + 1
    fresh = h.store.get_action_proposal(SCOPE, pending.id)
    assert fresh is not None and h.store.mark_expiry_announced(fresh) is False  # not expired


# -- races -------------------------------------------------------------------------------------


def _race(n: int, fn: Callable[[int], object]) -> list[object]:
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = fn(i)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=60)
    assert not errors, errors
    return results


def test_racing_threads_never_both_win(h: Harness) -> None:
    for round_ in range(3):
        p = h.approved(f"race-{round_}")
        leases = _race(6, lambda i: h.store.claim_next_action_proposal(f"w{i}", 60_000))
        winners = [x for x in leases if x is not None]
        assert len(winners) == 1
        assert isinstance(winners[0], ProposalLease) and winners[0].proposal.id == p.id

    q = h.propose("decide-race")
    outcomes = _race(
        4,
        lambda i: h.store.decide_action_proposal(
            SCOPE, q.id, "approved" if i % 2 else "rejected", decided_by=f"u{i}"
        ).outcome,
    )
    assert outcomes.count("applied") == 1
    assert set(outcomes) <= {"applied", "unchanged", "conflict"}


def test_two_processes_racing_claim_next(h: Harness) -> None:
    if h.url is None:
        pytest.skip("the in-memory twin lives in one process")
    assert h.engine is not None
    with h.engine.begin() as conn:
        conn.execute(sa.delete(action_proposals))
    h.clock.now = 0  # due at epoch 0: the worker processes use the wall clock
    ids = {h.approved(f"p-{i}").id for i in range(24)}

    procs = [
        subprocess.Popen(
            [sys.executable, str(RACE_WORKER), h.url, f"proc-{i}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        for i in range(2)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        won = []
        for proc in procs:
            out, _ = proc.communicate(timeout=120)
            assert proc.returncode == 0
            won.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert not set(won[0]) & set(won[1])  # never both
    assert sorted(won[0] + won[1]) == sorted(ids)  # and nothing lost


def test_deleting_the_thread_deletes_its_proposals(h: Harness) -> None:
    if h.engine is None:
        pytest.skip("the in-memory twin has no thread table")
    p = h.propose()
    with h.engine.begin() as conn:
        conn.execute(sa.delete(threads).where(threads.c.id == THREAD))
    assert h.store.get_action_proposal(SCOPE, p.id) is None
