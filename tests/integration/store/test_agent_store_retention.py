"""Retention: ``erase_thread`` leaves no row of the thread in any agent table (checked by a query over
every table in the metadata with a thread or run column), another thread's rows untouched; the
ledger purge deletes only old finished runs' step rows, in batches of the configured size."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from agent_store_support import FakeClock

from lunora_jobs.errors import ConflictError, NotFoundError
from lunora_jobs.memory.rows import rows_for
from lunora_jobs.runtime.threads_api import ThreadsAPI
from lunora_jobs.scheduling.retention import DAY_MS, purge_ledger
from lunora_jobs.store import AgentStore, SqlStore
from lunora_jobs.store.proposals.records import NewActionProposal, ProposalScope
from lunora_jobs.store.records import NewMessage, NewRun, OutboxEntry, RunOpening, StepCompletion, UsageEntry
from lunora_jobs.store.schema import inbound, metadata, schedules

THREAD_COLUMNS = ("thread_id", "run_id")


@pytest.fixture(params=["sqlite", "postgres", "mariadb"])
def sql_store(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[SqlStore]:
    url = request.getfixturevalue({"sqlite": "sqlite_url", "postgres": "pg_url", "mariadb": "mysql_url"}
                                  [str(request.param)])
    store = SqlStore.from_url(str(url), clock=clock)
    try:
        yield store
    finally:
        store.close()


def _done_step(store: AgentStore, run_id: str, name: str, thread_id: str, messages: int = 0) -> None:
    claim = store.claim_step(run_id, name, owner="w", lease_ms=1000)
    assert claim.step is not None
    new = [NewMessage(key=f"{run_id}:assistant:{i}", role="assistant", content=f"{name} {i}", run_id=run_id)
           for i in range(messages)]
    store.complete_step(run_id, name, claim.step.generation, StepCompletion(
        result={"ok": True}, messages=new,
        usage=UsageEntry(actor="alice", model="m", input_tokens=10, output_tokens=5, thread_id=thread_id,
                         run_id=run_id),
    ))


def _fill(store: SqlStore, key: str, clock: FakeClock) -> tuple[str, list[str]]:
    """A thread with a row in every agent table that can hold one of its rows."""
    thread = store.ensure_thread(key, owner="alice")
    run_id, queued = f"run-{key}", f"queued-{key}"
    store.create_run(NewRun(id=run_id, thread_id=thread.id, agent="a", input="hi"),
                     RunOpening(outbox=(OutboxEntry(run_id, "llm:turn:0", "turn", "a"),)))
    _done_step(store, run_id, "llm:turn:0", thread.id, messages=2)
    store.record_usage(UsageEntry(actor="alice", model="m", input_tokens=1, output_tokens=1, run_id=run_id))
    store.upsert_tool_call(thread.id, run_id, "call_1", name="x")
    scope = ProposalScope(None, "alice", thread.id)
    store.create_action_proposal(NewActionProposal(scope, f"call-{key}", "x", {"n": 1}, run_id=run_id))
    store.update_run(run_id, status="completed")
    store.create_run(NewRun(id=queued, thread_id=thread.id, agent="a", input="next"))
    store.enqueue_run(thread.id, queued)
    store.add_schedule("a", clock() + 60_000, {"input": "later", "thread_key": key}, id=f"later-{key}")
    store.add_schedule("a", clock() + 10**9, {"timing": "daily"}, id=f"cron:{key}", kind="cron")
    rows_for(store).add_episode("alice", run_id, "they asked for a refund", now=clock(), max_episodes=10,
                                ttl_ms=None)
    with store.engine.begin() as conn:
        conn.execute(sa.update(schedules).where(schedules.c.id == f"cron:{key}").values(run_id=run_id))
        conn.execute(sa.insert(inbound).values(
            key=hashlib.sha256(key.encode()).hexdigest(), channel="slack", agent="a", run_id=run_id,
            status="started", reply=None, reply_status="none", created_at=clock(), updated_at=clock()))
    return thread.id, [run_id, queued]


def _rows_of(store: SqlStore, key: str, thread_id: str, run_ids: list[str]) -> dict[str, int]:
    """Rows naming the thread (by id, key or one of its runs) in every table of the metadata."""
    found: dict[str, int] = {}
    with store.engine.connect() as conn:
        for table in metadata.sorted_tables:
            where = [table.c[c].in_(run_ids) if c == "run_id" else table.c[c] == thread_id
                     for c in THREAD_COLUMNS if c in table.c]
            if table.name == "agent_threads":
                where.append(table.c.id == thread_id)
            if table.name == "agent_schedules":
                where.append(table.c.payload.contains(key))
            if where:
                found[table.name] = int(conn.execute(
                    sa.select(sa.func.count()).select_from(table).where(sa.or_(*where))).scalar_one())
    return found


def test_erase_leaves_no_row_of_the_thread_in_any_table(sql_store: SqlStore, clock: FakeClock) -> None:
    gone_id, gone_runs = _fill(sql_store, "t-erase", clock)
    kept_id, kept_runs = _fill(sql_store, "t-keep", clock)
    before = _rows_of(sql_store, "t-erase", gone_id, gone_runs)
    kept_before = _rows_of(sql_store, "t-keep", kept_id, kept_runs)
    holding = {t for t, n in before.items() if n}
    assert holding >= {"agent_threads", "agent_messages", "agent_runs", "agent_steps", "agent_tool_calls",
                       "agent_token_usage", "agent_schedules", "agent_episodes", "agent_action_proposals",
                       "agent_run_queue", "agent_inbound", "agent_outbox"}, holding

    with pytest.raises(ConflictError):  # a queued run: a worker may still write into the thread
        ThreadsAPI(sql_store).erase("t-erase", viewer="alice")
    sql_store.dequeue_run(gone_id, gone_runs[1])
    with pytest.raises(NotFoundError):  # owner-gated like every other thread read
        ThreadsAPI(sql_store).erase("t-erase", viewer="mallory")
    counts = ThreadsAPI(sql_store).erase("t-erase", viewer="alice")

    assert _rows_of(sql_store, "t-erase", gone_id, gone_runs) == dict.fromkeys(before, 0)
    assert counts["agent_messages"] == 2 and counts["agent_runs"] == 2 and counts["agent_token_usage"] == 2
    assert _rows_of(sql_store, "t-keep", kept_id, kept_runs) == kept_before
    cron = sql_store.get_schedule("cron:t-erase")  # the app's code, not the thread's: only unlinked
    assert cron is not None and cron.run_id is None
    assert sql_store.erase_thread("t-erase") is None


def test_memory_store_erase_matches(store: AgentStore, clock: FakeClock) -> None:
    for key in ("t-erase", "t-keep"):
        thread = store.ensure_thread(key)
        store.create_run(NewRun(id=f"run-{key}", thread_id=thread.id, agent="a", input="hi"),
                         RunOpening(outbox=(OutboxEntry(f"run-{key}", "llm:turn:0", "turn", "a"),)))
        _done_step(store, f"run-{key}", "llm:turn:0", thread.id, messages=1)
        store.add_schedule("a", clock() + 60_000, {"thread_key": key}, id=f"later-{key}")
    counts = store.erase_thread("t-erase")
    assert counts is not None and counts["agent_steps"] == 1 and counts["agent_schedules"] == 1
    assert counts["agent_outbox"] == 1
    assert [e.run_id for e in store.due_outbox(clock() + 1, agents=["a"], limit=10)] == ["run-t-keep"]
    assert store.get_thread("t-erase") is None and store.get_run("run-t-erase") is None
    assert store.get_step("run-t-erase", "llm:turn:0") is None and store.get_schedule("later-t-erase") is None
    kept = store.get_thread("t-keep")
    assert kept is not None and len(store.list_messages(kept.id)) == 1
    assert store.get_step("run-t-keep", "llm:turn:0") is not None and store.get_schedule("later-t-keep")


def _run_with_steps(store: AgentStore, run_id: str, status: str, steps: int) -> None:
    thread = store.ensure_thread(f"t-{run_id}")
    store.create_run(NewRun(id=run_id, thread_id=thread.id, agent="a", input="hi"))
    for i in range(steps):
        _done_step(store, run_id, f"llm:turn:{i}", thread.id)
    store.update_run(run_id, status=status)


def test_retention_deletes_only_old_finished_runs_ledger_in_batches(
    store: AgentStore, clock: FakeClock
) -> None:
    _run_with_steps(store, "done", "completed", 5)
    _run_with_steps(store, "failed", "failed", 2)
    _run_with_steps(store, "running", "running", 3)
    _run_with_steps(store, "waiting", "awaiting_input", 2)
    clock.advance(31 * DAY_MS)
    _run_with_steps(store, "recent", "completed", 2)

    first = purge_ledger(store, days=30, batch=2, now_ms=clock(), max_batches=2)
    assert (first.deleted, first.batches, first.more) == (4, 2, True)  # bounded: 2 batches of 2
    rest = purge_ledger(store, days=30, batch=2, now_ms=clock())
    assert (rest.deleted, rest.batches, rest.more) == (3, 2, False)
    assert purge_ledger(store, days=30, batch=2, now_ms=clock()).deleted == 0

    assert store.list_steps("done") == [] and store.list_steps("failed") == []
    assert [len(store.list_steps(r)) for r in ("running", "waiting", "recent")] == [3, 2, 2]
    done = store.get_run("done")
    assert done is not None and done.status == "completed"  # the run and its transcript stay
    # Usage rows are billing and quotas: the purge keeps all 14 steps' rows.
    assert store.usage_between("alice", 0, clock() + 1).input_tokens == 14 * 10


def test_the_beat_tick_runs_the_configured_pass(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> None:
    from lunora_jobs import Lunora, Settings
    from lunora_jobs.store import InMemoryStore
    from workers.beat import beat_schedule

    monkeypatch.delenv("LUNORA_RETENTION_DAYS", raising=False)
    assert "lunora-retention" not in beat_schedule()  # off by default: no tick at all
    monkeypatch.setenv("LUNORA_RETENTION_DAYS", "30")
    monkeypatch.setenv("LUNORA_RETENTION_TICK", "120")
    entry = beat_schedule()["lunora-retention"]
    assert (entry["task"], entry["schedule"]) == ("lunora.retention", 120.0)

    store = InMemoryStore(clock=clock)
    _run_with_steps(store, "done", "completed", 3)
    clock.advance(31 * DAY_MS)
    off = Lunora(store=store, settings=Settings(scheduler_thread=False, retention_days=None))
    assert off.purge_ledger().deleted == 0 and len(store.list_steps("done")) == 3
    on = Lunora(store=store, settings=Settings(scheduler_thread=False, retention_days=30, retention_batch=2))
    report = on.purge_ledger()
    assert (report.deleted, report.batches, report.more) == (3, 2, False)
    assert store.list_steps("done") == []
