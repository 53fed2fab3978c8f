"""The schema rendered per dialect (no server): portable types, MySQL options, FK constraints, names."""

from __future__ import annotations

import pytest
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.schema import CreateTable

from lunora_jobs.store.schema import metadata

MYSQL: Dialect = mysql.dialect()
PG: Dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
SQLITE: Dialect = sqlite.dialect()

REQUIRED = {
    "agent_threads",
    "agent_messages",
    "agent_runs",
    "agent_steps",
    "agent_tool_calls",
    "agent_token_usage",
    "agent_schedules",
    "agent_entities",
    "agent_edges",
    "agent_episodes",
    "agent_pricing",
}


def test_every_table_is_declared_with_the_prefix() -> None:
    assert set(metadata.tables) >= REQUIRED
    assert all(name.startswith("agent_") for name in metadata.tables)


@pytest.mark.parametrize("dialect", [MYSQL, PG, SQLITE], ids=lambda d: str(d.name))
def test_ddl_uses_only_portable_types(dialect: Dialect) -> None:
    for table in metadata.sorted_tables:
        ddl = str(CreateTable(table, if_not_exists=True).compile(dialect=dialect))
        assert "IF NOT EXISTS" in ddl.upper()
        for column in table.columns:
            kind = column.type.compile(dialect=dialect).upper()
            for banned in ("JSON", "TIMESTAMP", "DATETIME", "BOOLEAN", "UUID"):
                assert banned not in kind, (table.name, column.name, kind)


def test_mysql_tables_are_innodb_utf8mb4_bin_with_longtext_payloads() -> None:
    ddl = str(CreateTable(metadata.tables["agent_messages"]).compile(dialect=MYSQL))
    assert "ENGINE=InnoDB" in ddl and "utf8mb4_bin" in ddl
    assert "content LONGTEXT" in ddl
    # A table-level constraint: MySQL silently ignores a column-level REFERENCES.
    assert "FOREIGN KEY(thread_id) REFERENCES agent_threads (id) ON DELETE CASCADE" in ddl


def test_thread_children_cascade() -> None:
    for name, parent in (
        ("agent_messages", "agent_threads"),
        ("agent_runs", "agent_threads"),
        ("agent_tool_calls", "agent_threads"),
        ("agent_token_usage", "agent_threads"),
        ("agent_steps", "agent_runs"),
    ):
        fks = metadata.tables[name].foreign_key_constraints
        assert any(fk.referred_table.name == parent and fk.ondelete == "CASCADE" for fk in fks), name


def test_index_names_follow_the_rule_and_fit_every_dialect() -> None:
    for table in metadata.sorted_tables:
        for idx in table.indexes:
            assert idx.name == f"{table.name}_{'_'.join(c.name for c in idx.columns)}_idx"
            assert len(str(idx.name)) <= 63  # Postgres truncates past 63, MySQL refuses past 64


def test_timestamps_are_bigint_epoch_ms() -> None:
    for table in metadata.sorted_tables:
        for column in table.columns:
            if column.name.endswith("_at"):
                assert column.type.compile(dialect=PG) == "BIGINT", (
                    table.name,
                    column.name,
                )
