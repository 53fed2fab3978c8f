"""Quotas on every store (in-memory, SQLite, PostgreSQL, MariaDB), on the store's clock.

Edges: a UTC day's window starts at midnight (a row one millisecond before it is yesterday's), a
rolling window holds the row exactly ``window`` old and drops it one millisecond later. A run at a
limit is refused before anything is written; a running one fails at its next turn without calling the
model; a usage read that fails refuses (fail closed).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import sqlalchemy as sa
from governance_stores import MIDNIGHT

from lunora_jobs import Lunora, Quota, QuotaExceededError, QuotaUnavailableError, Usage, define_agent
from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.governance import DAY_MS, QuotaWindow, UsageFilter
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import UsageEntry
from lunora_jobs.store.sql import create_store
from lunora_jobs.testing import FakeClock, agent_harness
from lunora_jobs.tools import ToolContext, tool

pytestmark = pytest.mark.integration

HOUR_S = 3600


def _app(store: AgentStore, quotas: list[Quota], script: list[Any] | None = None) -> Lunora:
    app = Lunora([define_agent(name="support", model="offline")], store=store, quotas=quotas,
                 settings=Settings(openai_api_key=None, openai_base_url=None, scheduler_thread=False))
    app.deps.model_override = ScriptedModel(script or [final_turn("hi")] * 4)
    return app


def _spend(store: AgentStore, at: int, tokens: int, *, actor: str | None = "u7", tenant: str | None = None,
           cost: float | None = None) -> None:
    store.record_usage(UsageEntry(actor=actor, tenant=tenant, model="m", input_tokens=tokens,
                                  cost_usd=cost, created_at=at))


def test_one_query_sums_every_window_like_the_grouped_read_model(store: AgentStore) -> None:
    rnd = random.Random(17)
    for _ in range(200):
        _spend(store, MIDNIGHT + rnd.randrange(-DAY_MS, 2 * DAY_MS), rnd.randrange(1, 1000),
               actor=rnd.choice(["a", "b", None]), tenant=rnd.choice(["t", "s", None]),
               cost=rnd.choice([None, 0.25]))
    windows = [QuotaWindow("actor", "a", MIDNIGHT), QuotaWindow("tenant", "t", MIDNIGHT - 5),
               QuotaWindow("actor", "b", MIDNIGHT + DAY_MS // 2), QuotaWindow("actor", "zed", 0)]
    end = MIDNIGHT + DAY_MS + 7
    gov: Any = store
    got = gov.quota_usage(windows, end)
    for window, total in zip(windows, got, strict=True):
        want = gov.usage_groups(None, window.start_ms, end, UsageFilter(**{window.column: window.value}))
        if not want:
            assert (total.rows, total.total_tokens, total.cost_usd) == (0, 0, None)
            continue
        assert (total.rows, total.input_tokens, total.unpriced_rows) == (
            want[0].rows, want[0].input_tokens, want[0].unpriced_rows)
        assert total.cost_usd == pytest.approx(want[0].cost_usd)


def test_a_day_quota_resets_at_utc_midnight(store: AgentStore, clock: FakeClock) -> None:
    app = _app(store, [Quota("actor", tokens=100)])
    clock.now = MIDNIGHT - 1
    _spend(store, MIDNIGHT - 1, 100)
    [status] = app.governance.quota_status(actor="u7")
    assert (status.tokens_used, status.exceeded) == (100, True)
    assert (status.start_ms, status.resets_at_ms) == (MIDNIGHT - DAY_MS, MIDNIGHT)
    with pytest.raises(QuotaExceededError, match="100 of 100 tokens"):
        app.agents.support.run(input="x", owner="u7")
    clock.advance(1)  # midnight UTC: yesterday's spend no longer counts
    [status] = app.governance.quota_status(actor="u7")
    assert (status.tokens_used, status.exceeded, status.start_ms) == (0, False, MIDNIGHT)
    assert app.agents.support.wait(app.agents.support.run(input="x", owner="u7").id).stopped == "final"


def test_a_rolling_window_holds_a_row_exactly_its_length(store: AgentStore, clock: FakeClock) -> None:
    app = _app(store, [Quota("tenant", tokens=50, window=HOUR_S)])
    spent_at = MIDNIGHT + 10 * 60_000
    _spend(store, spent_at, 60, actor=None, tenant="acme")
    clock.now = spent_at + HOUR_S * 1000  # the row is exactly one hour old: still in the window
    [status] = app.governance.quota_status(tenant="acme")
    assert (status.tokens_used, status.exceeded, status.resets_at_ms) == (60, True, None)
    with pytest.raises(QuotaExceededError, match="tenant 'acme'"):
        app.agents.support.run(input="x", owner="u1", tenant="acme")
    clock.advance(1)
    [status] = app.governance.quota_status(tenant="acme")
    assert (status.tokens_used, status.exceeded) == (0, False)
    app.agents.support.run(input="x", owner="u1", tenant="acme")


def test_a_refused_start_records_nothing_and_binds_only_its_actor_and_tenant(
    store: AgentStore, clock: FakeClock,
) -> None:
    quotas = [Quota("actor", tokens=100), Quota("actor", key="vip", tokens=10_000),
              Quota("tenant", cost_usd=1.0, window=HOUR_S)]
    app = _app(store, quotas)
    clock.advance(10 * 60_000)  # ten minutes into the UTC day
    now = clock()
    _spend(store, now - 5, 100, actor="u7")
    _spend(store, now - 5, 100, actor="vip")
    _spend(store, now - 5, 1, actor="other", tenant="acme", cost=1.0)
    with pytest.raises(QuotaExceededError) as refused:
        app.agents.support.run(input="x", thread_key="t-refused", owner="u7")
    assert [s.key for s in refused.value.statuses] == ["u7"]  # type: ignore[attr-defined]
    with pytest.raises(QuotaExceededError, match=r"\$1\.000000 of \$1"):
        app.agents.support.run(input="x", thread_key="t-tenant", owner="u8", tenant="acme")
    assert store.get_thread("t-refused") is None and store.get_thread("t-tenant") is None
    assert store.list_runs() == []
    # vip's own quota replaces the default one; a run without owner or tenant is bound by nothing
    app.agents.support.run(input="x", thread_key="t-vip", owner="vip")
    app.agents.support.run(input="x", thread_key="t-free")
    assert {r.owner for r in store.list_runs()} == {"vip", None}
    vip = app.governance.quota_status(actor="vip")
    assert [(s.quota.tokens, s.tokens_used) for s in vip] == [(10_000, 100)]
    assert app.governance.quota_status(actor="u8", tenant="acme")[1].cost_used_usd == pytest.approx(1.0)


def test_a_running_run_stops_at_its_next_turn(store: AgentStore) -> None:
    @tool
    def lookup(city: str) -> str:
        """Look a city up."""
        return f"{city}: ok"

    agent = define_agent(name="support", model="offline", tools=[lookup])
    harness = agent_harness(agent, [tool_call_turn("c1", "lookup", {"city": "Oslo"}, usage=Usage(80, 30)),
                                    final_turn("never")],
                            store=store, quotas=[Quota("actor", tokens=100)])
    result = harness.run(input="go", thread_key="t1", owner="u7")  # 0 used at start: admitted
    run = store.get_run(result.run_id)
    assert run is not None and run.status == "failed"
    assert "QuotaExceededError: over quota: actor 'u7': 110 of 100 tokens" in (run.error or "")
    assert len(harness.model.calls) == 1  # turn 1 never reached the model
    steps = {s.name: s for s in harness.steps(run.id)}
    assert steps["tool:lookup:c1"].status == "completed"
    assert steps["llm:turn:1"].status == "failed" and steps["llm:turn:1"].attempt == 1
    assert [m.role for m in harness.messages("t1")] == ["user", "assistant", "tool"]


def test_an_unreadable_ledger_fails_closed(sqlite_url: str) -> None:
    """A real failure: the usage table is gone, so no quota can be read — nothing proceeds."""
    clock = FakeClock(MIDNIGHT)
    store = create_store(sqlite_url, clock=clock)

    def drop_usage(args: dict[str, Any]) -> str:
        with store.engine.begin() as conn:  # type: ignore[attr-defined]
            conn.execute(sa.text("DROP TABLE agent_token_usage"))
        return "dropped"

    @tool
    def break_ledger(ctx: ToolContext) -> str:
        """Break the ledger."""
        return str(ctx.run("ops:drop", {}))

    agent = define_agent(name="support", model="offline", tools=[break_ledger], max_attempts=2)
    harness = agent_harness(agent, [tool_call_turn("c1", "break_ledger", {}), final_turn("never")],
                            functions={"ops:drop": drop_usage}, store=store,
                            quotas=[Quota("tenant", tokens=1000)])
    try:
        result = harness.run(input="go", thread_key="t1", owner="u7", tenant="acme")
        run = store.get_run(result.run_id)
        assert run is not None and run.status == "failed", run
        assert run.error is not None and "QuotaUnavailableError" in run.error
        assert len(harness.model.calls) == 1  # the turn after the failure never called the model
        with pytest.raises(QuotaUnavailableError, match="could not be read"):
            harness.app.agents.support.run(input="again", thread_key="t2", owner="u7", tenant="acme")
        assert store.get_thread("t2") is None
        # no quota binds a run without a tenant: it does not read the ledger at all
        assert harness.app.governance.quota_status(actor="u7") == []
    finally:
        store.close()


def test_quota_declarations_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="needs a limit"):
        Quota("actor")
    with pytest.raises(ConfigurationError, match="window="):
        Quota("actor", tokens=1, window=0)
    with pytest.raises(ConfigurationError, match="scope="):
        Quota("team", tokens=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="two quotas"):
        Lunora([], database_url="sqlite://", quotas=[Quota("actor", tokens=1),
                                                                 Quota("actor", cost_usd=2.0)])
