"""Model prices in the agent store (InMemoryStore, SQLite, PostgreSQL, MariaDB): effective dates,
name matching, seeding, precision, and the cost every usage row records (provider wins; the price in
force at the usage's time; an unpriced model gives no figure, never 0)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from agent_store_support import FakeClock

from lunora_jobs.errors import ConfigurationError
from lunora_jobs.models.base import Usage
from lunora_jobs.pricing import (
    ModelCost,
    PricingStore,
    estimate_model_cost,
    indicative_prices,
    resolve_model_cost,
)
from lunora_jobs.store import AgentStore, InMemoryStore, NewRun, SqlStore, StepCompletion, UsageEntry
from lunora_jobs.store.schema import token_usage

pytestmark = pytest.mark.integration

JAN, MAR, MAY = "2026-01-01", "2026-03-01", "2026-05-01"


def prices(store: AgentStore) -> PricingStore:
    assert isinstance(store, PricingStore)
    return store


def usage_rows(store: AgentStore) -> list[dict[str, Any]]:
    if isinstance(store, InMemoryStore):
        return [
            {"model": u.model, "cost_usd": u.cost_usd, "cost_source": u.cost_source}
            for u in store._usage
        ]
    assert isinstance(store, SqlStore)
    c = token_usage.c
    query = sa.select(c.model, c.cost_usd, c.cost_source).order_by(c.id)
    with store.engine.connect() as conn:
        return [dict(r) for r in conn.execute(query).mappings()]


def test_a_fresh_store_is_seeded_with_indicative_prices(store: AgentStore) -> None:
    store.ensure_tables()
    seeded = prices(store).list_prices()
    assert {p.model for p in seeded} == {p.model for p in indicative_prices()}
    assert prices(store).price_at("openai:gpt-4o-mini").input_per_mtok == 0.15  # type: ignore[union-attr]
    assert prices(store).seed_prices(indicative_prices()) == 0  # never over a table that has prices
    prices(store).delete_price("gpt-4o", 0)
    store.ensure_tables()  # a restart does not bring a deleted price back
    assert prices(store).price_at("gpt-4o") is None


def test_the_price_in_force_at_a_time(store: AgentStore) -> None:
    p = prices(store)
    p.set_price("gpt-x", input_per_mtok=1.0, output_per_mtok=4.0, effective_from=JAN)
    p.set_price("gpt-x", input_per_mtok=0.5, output_per_mtok=2.0, cached_input_per_mtok=0.25,
                effective_from=datetime(2026, 3, 1, tzinfo=UTC))
    assert p.price_at("gpt-x", "2025-12-31T23:59:59.999Z") is None
    assert p.price_at("gpt-x", JAN).input_per_mtok == 1.0  # type: ignore[union-attr]
    assert p.price_at("gpt-x", "2026-02-28T23:59:59Z").output_per_mtok == 4.0  # type: ignore[union-attr]
    march = p.price_at("gpt-x", MAR)
    assert march is not None and march.cached_input_per_mtok == 0.25
    assert [x.input_per_mtok for x in p.list_prices("gpt-x")] == [1.0, 0.5]


def test_set_replaces_the_same_start_and_delete_removes_it(store: AgentStore, clock: FakeClock) -> None:
    p = prices(store)
    p.set_price("m", input_per_mtok=1, output_per_mtok=1, effective_from=5)
    p.set_price("m", input_per_mtok=3, output_per_mtok=9, effective_from=5)
    [row] = p.list_prices("m")
    assert (row.input_per_mtok, row.output_per_mtok, row.effective_from) == (3.0, 9.0, 5)
    assert row.updated_at == clock.now
    assert p.set_price("m", input_per_mtok=2, output_per_mtok=2).effective_from == clock.now
    assert p.delete_price("m", 5) is True and p.delete_price("m", 5) is False
    assert [x.input_per_mtok for x in p.list_prices("m")] == [2.0]


def test_names_match_provider_and_dated_spellings(store: AgentStore) -> None:
    p = prices(store)
    p.set_price("mini-x", input_per_mtok=0.15, output_per_mtok=0.6, effective_from=0)
    spellings = [
        "openai:mini-x", "mini-x-2024-07-18", "openrouter:openai/mini-x", "anthropic:mini-x-20250929",
    ]
    for name in spellings:
        found = p.price_at(name)
        assert found is not None and found.model == "mini-x", name
    p.set_price("mini-x-2024-07-18", input_per_mtok=0.1, output_per_mtok=0.4, effective_from=0)
    assert p.price_at("mini-x-2024-07-18").input_per_mtok == 0.1  # type: ignore[union-attr]
    assert p.price_at("mini-x-2025-01-01").input_per_mtok == 0.15  # type: ignore[union-attr]


def test_prices_keep_full_precision(store: AgentStore) -> None:
    p = prices(store)
    p.set_price("p", input_per_mtok=0.075, output_per_mtok=1.2345678901, cached_input_per_mtok=0.0375,
                effective_from=0)
    [row] = p.list_prices("p")
    stored = (row.input_per_mtok, row.output_per_mtok, row.cached_input_per_mtok)
    assert stored == (0.075, 1.2345678901, 0.0375)


def test_estimates_use_the_price_in_force(store: AgentStore, clock: FakeClock) -> None:
    p = prices(store)
    p.set_price(
        "gpt-x", input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5, effective_from=0
    )
    p.set_price("gpt-x", input_per_mtok=1.0, output_per_mtok=4.0, effective_from=MAY)
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000, cache_read_tokens=400_000)
    # 600k uncached x 2 + 400k cached x 0.5 + 500k out x 8 = 1.2 + 0.2 + 4.0
    assert estimate_model_cost("gpt-x", usage, p, at="2026-04-30") == pytest.approx(5.4)
    # from May no cached price: cached input is charged at the input price
    assert estimate_model_cost("gpt-x", usage, p, at=MAY) == pytest.approx(3.0)
    assert resolve_model_cost("gpt-x", Usage(10, 10, cost_usd=0.0), p) == ModelCost(0.0, "provider")
    assert estimate_model_cost("local-llama", usage, p) is None
    assert resolve_model_cost("local-llama", usage, p) == ModelCost(None, "none")


def test_usage_rows_record_their_cost_and_its_source(store: AgentStore, clock: FakeClock) -> None:
    p = prices(store)
    p.set_price("gpt-x", input_per_mtok=2.0, output_per_mtok=8.0, effective_from=0)
    p.set_price("gpt-x", input_per_mtok=1.0, output_per_mtok=4.0, effective_from=clock.now + 1_000)
    thread = store.ensure_thread("t-cost", owner="ada")
    base = {"actor": "ada", "thread_id": thread.id, "input_tokens": 1_000_000, "output_tokens": 0}
    store.record_usage(UsageEntry(model="openai:gpt-x", **base))                         # old price
    store.record_usage(UsageEntry(model="gpt-x", created_at=clock.now + 1_000, **base))  # new price
    store.record_usage(UsageEntry(model="gpt-x", cost_usd=0.123, **base))               # provider wins
    store.record_usage(UsageEntry(model="local-llama", **base))                          # unpriced
    store.record_usage(UsageEntry(model=None, **base))
    # the completion of a turn step costs its usage in the same transaction
    store.create_run(NewRun(id="r-cost", thread_id=thread.id, agent="a", input="hi", owner="ada"))
    claim = store.claim_step("r-cost", "llm:turn:0", owner="w", lease_ms=60_000)
    assert claim.outcome == "claimed"
    usage = UsageEntry(model="gpt-x", run_id="r-cost", step="llm:turn:0", **base)
    done = StepCompletion(result={}, usage=usage)
    assert store.complete_step("r-cost", "llm:turn:0", claim.step.generation, done)
    rows = usage_rows(store)
    assert [(r["cost_source"], r["cost_usd"]) for r in rows] == [
        ("estimate", pytest.approx(2.0)),
        ("estimate", pytest.approx(1.0)),
        ("provider", pytest.approx(0.123)),
        ("none", None),
        ("none", None),
        ("estimate", pytest.approx(2.0)),
    ]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": "", "input_per_mtok": 1, "output_per_mtok": 1},
        {"model": "x" * 256, "input_per_mtok": 1, "output_per_mtok": 1},
        {"model": "m", "input_per_mtok": -1, "output_per_mtok": 1},
        {"model": "m", "input_per_mtok": 1, "output_per_mtok": float("inf")},
        {"model": "m", "input_per_mtok": True, "output_per_mtok": 1},
        {"model": "m", "input_per_mtok": 1, "output_per_mtok": 1, "cached_input_per_mtok": "cheap"},
        {"model": "m", "input_per_mtok": 1, "output_per_mtok": 1, "effective_from": "next tuesday"},
        {"model": "m", "input_per_mtok": 1, "output_per_mtok": 1, "effective_from": -5},
    ],
)
def test_bad_prices_are_named_errors(kwargs: dict[str, Any]) -> None:
    store = InMemoryStore()
    model = kwargs.pop("model")
    with pytest.raises(ConfigurationError):
        store.set_price(model, **kwargs)


def test_lunora_pricing_commands(tmp_path: object) -> None:
    from typer.testing import CliRunner

    from lunora_jobs.cli import app

    url = f"sqlite:///{tmp_path}/cli.db"
    runner = CliRunner()
    done = runner.invoke(app, ["pricing", "set", "gpt-x", "--input", "1.25", "--output", "5",
                               "--cached-input", "0.125", "--from", "2026-02-01", "--url", url])
    assert done.exit_code == 0, done.output
    assert "gpt-x: input 1.25, cached input 0.125, output 5 USD per 1M tokens, from 2026-02-01" in done.output
    listed = runner.invoke(app, ["pricing", "list", "--url", url])
    assert listed.exit_code == 0 and "gpt-4o-mini" in listed.output  # the seed is there too
    as_json = runner.invoke(app, ["pricing", "list", "--model", "gpt-x", "--json", "--url", url])
    [row] = [json.loads(line) for line in as_json.output.splitlines()]
    assert row["input_per_mtok"] == 1.25 and row["effective_from"] == 1769904000000
    bad = runner.invoke(app, ["pricing", "set", "gpt-x", "--input", "-1", "--output", "5", "--url", url])
    assert bad.exit_code == 1 and "input price must be a number" in bad.output
    assert "Traceback" not in bad.output
