"""Contract: the console's reads — messages after a seq, keyset pages of runs, usage per model."""

from __future__ import annotations

import pytest
from agent_store_support import FakeClock

from lunora_jobs.store import AgentStore, NewMessage, NewRun, UsageEntry

pytestmark = pytest.mark.integration


def test_messages_after_a_seq(store: AgentStore) -> None:
    thread = store.ensure_thread("t", owner="alice")
    batch = [NewMessage(key=f"r:user:{i}", role="user", content=str(i)) for i in range(5)]
    store.append_messages(thread.id, batch)
    assert [m.seq for m in store.list_messages_after(thread.id, 0, 100)] == [1, 2, 3, 4, 5]
    assert [m.content for m in store.list_messages_after(thread.id, 2, 2)] == ["2", "3"]
    assert store.list_messages_after(thread.id, 5, 10) == []


def test_runs_page_newest_first_filtered_and_keyset_paged(store: AgentStore, clock: FakeClock) -> None:
    made = []
    for i in range(7):
        owner = "alice" if i % 2 == 0 else "bob"
        thread = store.ensure_thread(f"t{i}", owner=owner)
        clock.advance(1 if i != 3 else 0)  # runs 2 and 3 share a timestamp: the id breaks the tie
        agent = "support" if i < 5 else "other"
        run = store.create_run(NewRun(f"run-{i}", thread.id, agent, "go", owner=owner))
        made.append(run)
    store.update_run("run-1", status="completed", turns=2, input_tokens=5, output_tokens=7)
    newest_first = sorted(made, key=lambda r: (r.created_at, r.id), reverse=True)
    page = store.page_runs(limit=3)
    assert [r.id for r in page] == [r.id for r in newest_first[:3]]
    rest = store.page_runs(before=(page[-1].created_at, page[-1].id), limit=10)
    assert [r.id for r in page + rest] == [r.id for r in newest_first]
    assert [r.id for r in store.page_runs(owner="alice")] == ["run-6", "run-4", "run-2", "run-0"]
    assert [r.id for r in store.page_runs(agent="other")] == ["run-6", "run-5"]
    done = store.page_runs(status="completed")
    assert [(r.id, r.thread_key, r.owner, r.turns, r.input_tokens, r.output_tokens) for r in done] == [
        ("run-1", "t1", "bob", 2, 5, 7)
    ]
    assert [r.id for r in store.page_runs(thread_id=store.get_thread("t3").id)] == ["run-3"]  # type: ignore[union-attr]
    assert store.page_runs(owner="carol") == []


def test_usage_by_model_sums_per_run_and_model(store: AgentStore) -> None:
    thread = store.ensure_thread("t", owner="alice")
    for run_id, model, tokens, cost in (("r1", "m1", 10, None), ("r1", "m1", 5, 0.5), ("r1", "m2", 1, None),
                                        ("r2", "m1", 3, None), ("r3", "m1", 100, None)):
        store.record_usage(UsageEntry(actor="alice", model=model, input_tokens=tokens,
                                      output_tokens=2 * tokens, thread_id=thread.id, run_id=run_id,
                                      cost_usd=cost))
    rows = {(u.run_id, u.model): u for u in store.usage_by_model(["r1", "r2"])}
    assert set(rows) == {("r1", "m1"), ("r1", "m2"), ("r2", "m1")}
    both = rows["r1", "m1"]
    assert (both.input_tokens, both.output_tokens, both.cost_usd) == (15, 30, 0.5)
    assert rows["r1", "m2"].cost_usd is None and rows["r2", "m1"].input_tokens == 3
    assert store.usage_by_model([]) == []
