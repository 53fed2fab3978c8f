"""Migration 0004 on a database of the 0003 era: agent_pricing re-keyed by (model, effective_from)
with its rows kept, agent_token_usage.cost_source added, and the result equal to an auto-created schema."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from lunora_jobs.errors import ConfigurationError
from lunora_jobs.store import SqlStore, UsageEntry, create_engine, ensure_tables
from lunora_jobs.store.migrations import current, head, upgrade

OLD_PRICING = """CREATE TABLE agent_pricing (
    model VARCHAR(255) NOT NULL, input_per_mtok FLOAT NOT NULL, output_per_mtok FLOAT NOT NULL,
    updated_at BIGINT NOT NULL, PRIMARY KEY (model))"""


def _to_0003_shape(engine: sa.Engine) -> None:
    """Make sure a database at 0003 has what 0003 left — the old pricing table, no cost_source —
    (the revisions are frozen DDL now, so it already has; this only undoes a newer shape) and give
    the old table a price."""
    inspector = sa.inspect(engine)
    pricing = {c["name"] for c in inspector.get_columns("agent_pricing")}
    usage = {c["name"] for c in inspector.get_columns("agent_token_usage")}
    with engine.begin() as conn:
        if "effective_from" in pricing:
            conn.execute(sa.text("DROP TABLE agent_pricing"))
            conn.execute(sa.text(OLD_PRICING))
        if "cost_source" in usage:
            conn.execute(sa.text("ALTER TABLE agent_token_usage DROP COLUMN cost_source"))
        if engine.dialect.name == "mysql":
            conn.execute(sa.text("ALTER TABLE agent_token_usage MODIFY cost_usd FLOAT"))
        conn.execute(sa.text(
            "INSERT INTO agent_pricing (model, input_per_mtok, output_per_mtok, updated_at) "
            "VALUES ('legacy-model', 1.5, 6.0, 42)"
        ))


def test_upgrade_from_0003_keeps_prices_and_matches_auto_create(sql_url: str) -> None:
    upgrade(sql_url, "0003")
    engine = create_engine(sql_url)
    _to_0003_shape(engine)
    upgrade(sql_url)
    assert current(sql_url) == head()
    assert ensure_tables(engine) == 0  # migrated == auto-created
    inspector = sa.inspect(engine)
    assert inspector.get_pk_constraint("agent_pricing")["constrained_columns"] == ["model", "effective_from"]
    assert "cost_source" in {c["name"] for c in inspector.get_columns("agent_token_usage")}
    if engine.dialect.name == "mysql":
        types = {c["name"]: str(c["type"]) for c in inspector.get_columns("agent_token_usage")}
        assert types["cost_usd"].startswith("DOUBLE")
    store = SqlStore(engine)
    [legacy] = store.list_prices("legacy-model")
    assert (legacy.input_per_mtok, legacy.output_per_mtok, legacy.effective_from) == (1.5, 6.0, 0)
    store.set_price("legacy-model", input_per_mtok=1.0, output_per_mtok=4.0, effective_from="2026-01-01")
    assert [p.input_per_mtok for p in store.list_prices("legacy-model")] == [1.5, 1.0]
    store.close()


def test_auto_provisioning_keeps_a_pre_0004_database_working(sql_url: str) -> None:
    """Without `lunora db upgrade`, ensure_tables adds the new columns; usage is costed; a second dated
    price for one model asks for the migration by name."""
    upgrade(sql_url, "0003")
    engine = create_engine(sql_url)
    _to_0003_shape(engine)
    store = SqlStore(engine)  # auto_create_tables=True
    store.ensure_tables()
    [legacy] = store.list_prices("legacy-model")
    assert (legacy.input_per_mtok, legacy.effective_from) == (1.5, 0)
    thread = store.ensure_thread("t-old", owner="o")
    entry = UsageEntry(actor="o", model="legacy-model", thread_id=thread.id, input_tokens=2_000_000)
    store.record_usage(entry)
    with engine.connect() as conn:
        cost, source = conn.execute(sa.text("SELECT cost_usd, cost_source FROM agent_token_usage")).one()
    assert (source, cost) == ("estimate", pytest.approx(3.0))
    with pytest.raises(ConfigurationError, match="lunora db upgrade"):
        store.set_price("legacy-model", input_per_mtok=1.0, output_per_mtok=4.0, effective_from="2026-01-01")
    store.close()


def test_an_unreadable_price_table_never_fails_a_usage_write(sqlite_url: str) -> None:
    store = SqlStore.from_url(sqlite_url)
    thread = store.ensure_thread("t", owner="o")
    with store.engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE agent_pricing"))
    store._forget_prices()  # as if the snapshot had expired
    store.record_usage(UsageEntry(actor="o", model="gpt-4o-mini", thread_id=thread.id, input_tokens=10))
    with store.engine.connect() as conn:
        row = conn.execute(sa.text("SELECT cost_usd, cost_source FROM agent_token_usage")).one()
    assert tuple(row) == (None, "none")
    store.close()
