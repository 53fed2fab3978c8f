"""Contract: threads — get-or-create by key, immutable owner, patches, active run, identity limits."""

from __future__ import annotations

import pytest
from agent_store_support import FakeClock

from lunora_jobs.errors import ConflictError, IdentityTooLongError, NotFoundError
from lunora_jobs.store import AgentStore, NewRun, UsageEntry

pytestmark = pytest.mark.integration


def test_ensure_thread_creates_once_and_seeds_state_only_on_creation(store: AgentStore) -> None:
    first = store.ensure_thread(
        "t1",
        owner="alice",
        title="Hi",
        agent="support",
        model="openai:gpt-4o-mini",
        initial_state={"step": 0},
    )
    again = store.ensure_thread("t1", owner="alice", initial_state={"step": 99}, model="other")
    assert again.id == first.id
    assert again.state == {"step": 0}
    assert again.model == "openai:gpt-4o-mini"
    assert (first.status, first.title, first.agent, first.active_run_id) == ("idle", "Hi", "support", None)
    assert store.get_thread("t1") == again
    assert store.get_thread_by_id(first.id) == again
    assert store.get_thread("nope") is None
    assert store.model_for_thread(first.id) == "openai:gpt-4o-mini"


def test_owner_is_immutable_and_keys_are_case_sensitive(store: AgentStore) -> None:
    thread = store.ensure_thread("t1", owner="alice")
    with pytest.raises(ConflictError):
        store.ensure_thread("t1", owner="ALICE")
    with pytest.raises(ConflictError):
        store.ensure_thread("t1", owner="mallory")
    assert store.ensure_thread("t1").id == thread.id  # trusted access names no owner
    other = store.ensure_thread("T1", owner="bob")  # binary collation: a different key
    assert other.id != thread.id
    assert store.get_thread("t1").owner == "alice"  # type: ignore[union-attr]


def test_patch_thread_sets_fields_increments_totals_and_bumps_updated_at(
    store: AgentStore, clock: FakeClock
) -> None:
    thread = store.ensure_thread("t1")
    clock.advance(5)
    store.patch_thread(
        thread.id,
        status="running",
        title="T",
        state={"a": [1, 2]},
        model="m",
        agent="a",
        add_input_tokens=7,
        add_output_tokens=3,
    )
    store.patch_thread(thread.id, add_input_tokens=1)
    got = store.get_thread_by_id(thread.id)
    assert got is not None
    assert (got.status, got.title, got.state, got.model, got.agent) == (
        "running",
        "T",
        {"a": [1, 2]},
        "m",
        "a",
    )
    assert (got.input_tokens, got.output_tokens) == (8, 3)
    assert got.updated_at == thread.updated_at + 5
    with pytest.raises(ValueError, match="cannot patch thread field 'colour'"):
        store.patch_thread(thread.id, colour="red")
    with pytest.raises(NotFoundError):
        store.patch_thread("missing", status="idle")


def test_acquire_and_release_thread(store: AgentStore) -> None:
    thread = store.ensure_thread("t1")
    assert store.acquire_thread(thread.id, "run-a")
    assert store.acquire_thread(thread.id, "run-a")  # re-entrant for the holder
    assert not store.acquire_thread(thread.id, "run-b")
    assert not store.release_thread(thread.id, "run-b")
    assert store.get_thread_by_id(thread.id).active_run_id == "run-a"  # type: ignore[union-attr]
    assert store.release_thread(thread.id, "run-a")
    assert store.acquire_thread(thread.id, "run-b")


def test_list_threads_by_owner_latest_first(store: AgentStore, clock: FakeClock) -> None:
    a = store.ensure_thread("a", owner="u1")
    clock.advance(1)
    b = store.ensure_thread("b", owner="u1")
    store.ensure_thread("c", owner="u2")
    clock.advance(1)
    store.patch_thread(a.id, title="touched")
    assert [t.id for t in store.list_threads(owner="u1")] == [a.id, b.id]  # type: ignore[attr-defined]
    assert len(store.list_threads()) == 3  # type: ignore[attr-defined]


def test_identity_fields_over_255_are_refused_not_truncated(store: AgentStore) -> None:
    exact = "k" * 255
    thread = store.ensure_thread(exact, owner="o" * 255)
    assert store.get_thread(exact).key == exact  # type: ignore[union-attr]
    assert thread.owner == "o" * 255
    too_long = "x" * 256
    with pytest.raises(IdentityTooLongError, match="255"):
        store.ensure_thread(too_long)
    with pytest.raises(ValueError):
        store.ensure_thread("ok", owner=too_long)
    with pytest.raises(IdentityTooLongError):
        store.record_usage(UsageEntry(actor=too_long, model="m", input_tokens=1))
    with pytest.raises(IdentityTooLongError):
        store.quota_today(too_long)
    with pytest.raises(IdentityTooLongError):
        store.fork_thread(thread.id, too_long)
    with pytest.raises(IdentityTooLongError):
        store.create_run(NewRun(id="r", thread_id=thread.id, agent="a", input=None, owner=too_long))
    assert store.get_thread("ok") is None
