"""Contract: runs and the step ledger — claim, lease takeover, fencing, attempts, completion."""

from __future__ import annotations

import pytest
from agent_store_support import FakeClock

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store import AgentStore, NewMessage, NewRun, StepCompletion, ThreadRecord, UsageEntry

pytestmark = pytest.mark.integration

LEASE = 30_000


@pytest.fixture
def thread(store: AgentStore) -> ThreadRecord:
    t = store.ensure_thread("t1", owner="alice")
    store.create_run(NewRun(id="r1", thread_id=t.id, agent="support", input={"q": "hi"}, owner="alice"))
    return t


def test_runs_are_idempotent_patchable_and_listed(
    store: AgentStore, thread: ThreadRecord, clock: FakeClock
) -> None:
    again = store.create_run(NewRun(id="r1", thread_id=thread.id, agent="other", input="ignored"))
    assert (again.agent, again.input, again.status, again.turns) == ("support", {"q": "hi"}, "running", 0)
    clock.advance(1)
    store.create_run(NewRun(id="r2", thread_id=thread.id, agent="support", input=None, status="queued"))
    store.update_run(
        "r1",
        status="completed",
        result={"text": "done"},
        stopped="final",
        add_turns=2,
        add_input_tokens=5,
        add_output_tokens=1,
    )
    store.update_run("r1", add_turns=1, error="none")
    run = store.get_run("r1")
    assert run is not None
    assert (
        run.status,
        run.result,
        run.stopped,
        run.turns,
        run.input_tokens,
        run.output_tokens,
        run.error,
    ) == ("completed", {"text": "done"}, "final", 3, 5, 1, "none")
    assert [r.id for r in store.list_runs(thread_id=thread.id)] == ["r1", "r2"]
    assert [r.id for r in store.list_runs(status="queued")] == ["r2"]
    assert store.get_run("nope") is None
    with pytest.raises(ValueError, match="cannot patch run field"):
        store.update_run("r1", bogus=1)
    with pytest.raises(NotFoundError):
        store.update_run("nope", status="failed")
    with pytest.raises(NotFoundError):
        store.create_run(NewRun(id="r3", thread_id="no-thread", agent="a", input=None))


def test_claim_busy_takeover_and_fencing(store: AgentStore, thread: ThreadRecord, clock: FakeClock) -> None:
    first = store.claim_step("r1", "llm:turn:0", owner="w1", lease_ms=LEASE)
    assert first.outcome == "claimed"
    assert (first.step.attempt, first.step.generation, first.step.lease_owner) == (1, 1, "w1")
    assert first.step.lease_expires_at == clock.now + LEASE
    busy = store.claim_step("r1", "llm:turn:0", owner="w2", lease_ms=LEASE)
    assert busy.outcome == "busy" and busy.step.lease_owner == "w1"

    clock.advance(LEASE)  # expiry is inclusive: a lease ending now is expired
    taken = store.claim_step("r1", "llm:turn:0", owner="w2", lease_ms=LEASE)
    assert taken.outcome == "claimed"
    assert (taken.step.attempt, taken.step.generation, taken.step.lease_owner) == (2, 2, "w2")

    # The first worker wakes up and tries to record its result: fenced out, nothing written.
    stale = StepCompletion(
        result="stale",
        messages=[NewMessage(key="r1:assistant:1", role="assistant", content="stale")],
        usage=UsageEntry(actor="alice", model="m", input_tokens=100),
        run_patch={"add_turns": 1, "status": "completed"},
        thread_patch={"status": "completed", "add_input_tokens": 100},
    )
    assert not store.complete_step("r1", "llm:turn:0", first.step.generation, stale)
    assert store.list_messages(thread.id) == []
    assert store.quota_today("alice") == 0
    assert store.get_run("r1").turns == 0  # type: ignore[union-attr]
    assert store.get_thread_by_id(thread.id).status == "idle"  # type: ignore[union-attr]
    assert not store.fail_step("r1", "llm:turn:0", first.step.generation, "late")

    fresh = StepCompletion(
        result={"text": "ok"},
        messages=[NewMessage(key="r1:assistant:1", role="assistant", content="ok", run_id="r1")],
        usage=UsageEntry(
            actor="alice",
            model="m",
            input_tokens=7,
            output_tokens=3,
            cache_read_tokens=5,
            run_id="r1",
            step="llm:turn:0",
        ),
        run_patch={"add_turns": 1, "add_input_tokens": 7, "add_output_tokens": 3},
        thread_patch={
            "add_input_tokens": 7,
            "add_output_tokens": 3,
            "state": {"n": 1},
            "active_run_id": "r1",
        },
    )
    assert store.complete_step("r1", "llm:turn:0", taken.step.generation, fresh)
    assert not store.complete_step("r1", "llm:turn:0", taken.step.generation, fresh)  # already completed

    replay = store.claim_step("r1", "llm:turn:0", owner="w3", lease_ms=LEASE)
    assert replay.outcome == "completed" and replay.step.result == {"text": "ok"}
    assert [m.content for m in store.list_messages(thread.id)] == ["ok"]
    run = store.get_run("r1")
    assert run is not None and (run.turns, run.input_tokens, run.output_tokens) == (1, 7, 3)
    t = store.get_thread_by_id(thread.id)
    assert t is not None and (t.input_tokens, t.output_tokens, t.state, t.active_run_id) == (
        7,
        3,
        {"n": 1},
        "r1",
    )
    assert store.quota_today("alice") == 10  # cache tokens are inside input, never re-added
    step = store.get_step("r1", "llm:turn:0")
    assert step is not None and step.status == "completed" and step.generation == 2


def test_attempts_are_bounded_by_max_attempts(
    store: AgentStore, thread: ThreadRecord, clock: FakeClock
) -> None:
    for attempt in (1, 2, 3):
        claim = store.claim_step(
            "r1", "tool:crash:call_1", owner=f"w{attempt}", lease_ms=LEASE, max_attempts=3
        )
        assert claim.outcome == "claimed" and claim.step.attempt == attempt
        clock.advance(LEASE)  # the worker died holding the lease
    exhausted = store.claim_step("r1", "tool:crash:call_1", owner="w4", lease_ms=LEASE, max_attempts=3)
    assert exhausted.outcome == "exhausted" and exhausted.step.attempt == 3


def test_fail_step_releases_or_ends_the_step(store: AgentStore, thread: ThreadRecord) -> None:
    claim = store.claim_step("r1", "tool:x:c1", owner="w1", lease_ms=LEASE)
    assert store.fail_step("r1", "tool:x:c1", claim.step.generation, "boom")
    retry = store.claim_step("r1", "tool:x:c1", owner="w2", lease_ms=LEASE)  # no waiting for the lease
    assert retry.outcome == "claimed" and retry.step.attempt == 2 and retry.step.error == "boom"
    assert store.fail_step("r1", "tool:x:c1", retry.step.generation, "fatal", terminal=True)
    failed = store.claim_step("r1", "tool:x:c1", owner="w3", lease_ms=LEASE)
    assert failed.outcome == "failed" and failed.step.error == "fatal"


def test_invalid_completion_writes_nothing(store: AgentStore, thread: ThreadRecord) -> None:
    claim = store.claim_step("r1", "llm:turn:0", owner="w1", lease_ms=LEASE)
    bad = StepCompletion(
        result=1,
        messages=[NewMessage(key="r1:assistant:1", role="assistant", content="x")],
        run_patch={"turnz": 1},
    )
    with pytest.raises(ValueError):
        store.complete_step("r1", "llm:turn:0", claim.step.generation, bad)
    assert store.get_step("r1", "llm:turn:0").status == "running"  # type: ignore[union-attr]
    assert store.list_messages(thread.id) == []


def test_steps_listed_in_creation_order_and_missing_run_refused(
    store: AgentStore, thread: ThreadRecord, clock: FakeClock
) -> None:
    for name in ("llm:turn:0", "tool:a:1", "approval:1"):
        store.claim_step("r1", name, owner="w", lease_ms=LEASE)
        clock.advance(1)
    assert [s.name for s in store.list_steps("r1")] == ["llm:turn:0", "tool:a:1", "approval:1"]
    assert store.get_step("r1", "nope") is None
    with pytest.raises(NotFoundError):
        store.claim_step("no-run", "llm:turn:0", owner="w", lease_ms=LEASE)


def test_renew_lease_extends_only_the_current_running_generation(
    store: AgentStore, thread: ThreadRecord, clock: FakeClock
) -> None:
    first = store.claim_step("r1", "tool:x:c1", owner="w1", lease_ms=LEASE)
    clock.advance(LEASE - 1)
    assert store.renew_lease("r1", "tool:x:c1", first.step.generation, LEASE)  # the heartbeat
    clock.advance(LEASE - 1)  # past the first lease, within the renewed one
    assert store.claim_step("r1", "tool:x:c1", owner="w2", lease_ms=LEASE).outcome == "busy"
    clock.advance(1)  # the renewed lease lapses: the worker stopped renewing (it died)
    taken = store.claim_step("r1", "tool:x:c1", owner="w2", lease_ms=LEASE)
    assert taken.outcome == "claimed" and taken.step.generation == first.step.generation + 1
    assert not store.renew_lease("r1", "tool:x:c1", first.step.generation, LEASE)  # fenced out
    step = store.get_step("r1", "tool:x:c1")
    assert step is not None and step.lease_expires_at == clock.now + LEASE and step.lease_owner == "w2"
    assert store.complete_step("r1", "tool:x:c1", taken.step.generation, StepCompletion(result=1))
    assert not store.renew_lease("r1", "tool:x:c1", taken.step.generation, LEASE)  # not running


def test_reclaim_takes_over_only_the_owners_own_generation(
    store: AgentStore, thread: ThreadRecord, clock: FakeClock
) -> None:
    first = store.claim_step("r1", "tool:x:c1", owner="w1", lease_ms=LEASE)
    gen = first.step.generation
    # Someone else's live lease, or a generation that is not the current one: still busy.
    assert store.reclaim_step("r1", "tool:x:c1", gen, owner="w2", lease_ms=LEASE).outcome == "busy"
    assert store.reclaim_step("r1", "tool:x:c1", gen + 1, owner="w1", lease_ms=LEASE).outcome == "busy"
    again = store.reclaim_step("r1", "tool:x:c1", gen, owner="w1", lease_ms=LEASE, max_attempts=3)
    assert again.outcome == "claimed"
    assert (again.step.attempt, again.step.generation, again.step.lease_owner) == (2, gen + 1, "w1")
    assert not store.complete_step("r1", "tool:x:c1", gen, StepCompletion(result="stale"))
    # The attempt counter still bounds it.
    third = store.reclaim_step("r1", "tool:x:c1", gen + 1, owner="w1", lease_ms=LEASE, max_attempts=2)
    assert third.outcome == "busy" and third.step.attempt == 2
    assert store.complete_step("r1", "tool:x:c1", again.step.generation, StepCompletion(result="ok"))
    done = store.reclaim_step("r1", "tool:x:c1", gen + 1, owner="w1", lease_ms=LEASE)
    assert done.outcome == "completed" and done.step.result == "ok"
