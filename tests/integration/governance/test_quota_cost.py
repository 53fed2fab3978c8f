"""What a quota check costs on PostgreSQL, counted as SQL statements on the store's engine: nothing
without quotas; with quotas (actor and tenant, UTC day and rolling window: four sums), ONE aggregate
statement at the start and ONE per turn — the rest of the run's statements are unchanged."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from lunora_jobs import Lunora, Quota, ScriptedModel, define_agent, final_turn, tool, tool_call_turn
from lunora_jobs.config import Settings
from lunora_jobs.store.sql import create_store

pytestmark = pytest.mark.integration

QUOTAS = [Quota("actor", tokens=10**9), Quota("actor", tokens=10**9, window=3600),
          Quota("tenant", cost_usd=10.0), Quota("tenant", tokens=10**9, window=600)]


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: ok"


def _statements(pg_url: str, quotas: list[Quota], prefix: str) -> list[str]:
    store = create_store(pg_url)
    seen: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute",
                    lambda conn, cursor, statement, *rest: seen.append(statement))
    app = Lunora([define_agent(name="support", model="offline", tools=[lookup])], store=store, quotas=quotas,
                 settings=Settings(openai_api_key=None, openai_base_url=None, scheduler_thread=False),
                 model=ScriptedModel([tool_call_turn("c1", "lookup", {"city": "Oslo"}), final_turn("done")]))
    try:
        for i in range(3):  # the first run warms the tables' checks and the pool
            seen.clear()
            handle = app.agents.support.run(input="go", thread_key=f"{prefix}{i}", owner="u7", tenant="acme")
            assert app.agents.support.result(handle.id).stopped == "final"
        return list(seen)
    finally:
        app.close()


def _quota_reads(statements: list[str]) -> list[str]:
    return [s for s in statements if "FROM agent_token_usage" in s]


def test_a_quota_check_is_one_statement_at_start_and_per_turn(pg_url: str) -> None:
    without = _statements(pg_url, [], "plain-")
    with_quotas = _statements(pg_url, QUOTAS, "quota-")
    assert _quota_reads(without) == []
    reads = _quota_reads(with_quotas)
    assert len(reads) == 3, reads  # the start and turns 0 and 1
    assert all(s.lstrip().upper().startswith("SELECT") for s in reads)
    assert len(with_quotas) - len(without) == 3
