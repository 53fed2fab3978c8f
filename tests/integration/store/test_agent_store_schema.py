"""Provisioning against the real servers: idempotent ensure_tables, catalog checks, Alembic upgrade."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from lunora_jobs.store import SqlStore, create_engine, ensure_tables
from lunora_jobs.store.ddl import column_names, index_names, table_names
from lunora_jobs.store.migrations import current, head, upgrade
from lunora_jobs.store.schema import metadata

pytestmark = pytest.mark.integration


def test_ensure_tables_only_reads_against_a_current_schema(sql_url: str) -> None:
    engine = create_engine(sql_url)
    assert ensure_tables(engine) > len(metadata.tables)
    statements: list[str] = []
    sa.event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    assert ensure_tables(engine) == 0
    assert statements and all(s.lstrip().upper().startswith("SELECT") for s in statements), statements
    assert len(statements) == 3  # one catalog query each: tables, columns, indexes
    engine.dispose()


def test_catalog_has_named_indexes_and_dialect_options(sql_url: str) -> None:
    engine = create_engine(sql_url)
    ensure_tables(engine)
    with engine.connect() as conn:
        names = {n.lower() for n in index_names(conn)}
        for table in metadata.sorted_tables:
            for idx in table.indexes:
                cols = "_".join(c.name for c in idx.columns)
                assert idx.name == f"{table.name}_{cols}_idx"
                assert str(idx.name).lower() in names
        if engine.dialect.name == "mysql":
            rows = conn.execute(
                sa.text(
                    "SELECT table_name, engine, table_collation FROM information_schema.tables"
                    " WHERE table_schema = DATABASE() AND table_name LIKE 'agent\\_%'"
                )
            ).all()
            assert {r[0] for r in rows} >= set(metadata.tables)
            assert {(r[1], r[2]) for r in rows} == {("InnoDB", "utf8mb4_bin")}
            kinds: dict[str, str] = dict(
                conn.execute(
                    sa.text(
                        "SELECT column_name, data_type FROM information_schema.columns"
                        " WHERE table_schema = DATABASE() AND table_name = 'agent_messages'"
                    )
                ).all()
            )
            assert kinds["content"] == "longtext" and kinds["created_at"] == "bigint"
    engine.dispose()


def test_ensure_tables_adds_what_a_newer_release_declares(sql_url: str) -> None:
    engine = create_engine(sql_url)
    v1 = sa.MetaData()
    sa.Table("agent_demo", v1, sa.Column("id", sa.String(64), primary_key=True))
    assert ensure_tables(engine, v1) == 1
    v2 = sa.MetaData()
    sa.Table(
        "agent_demo",
        v2,
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("extra", sa.BigInteger, nullable=False, server_default="0"),
        sa.Index("agent_demo_extra_idx", "extra"),
    )
    assert ensure_tables(engine, v2) == 2
    with engine.connect() as conn:
        assert "extra" in column_names(conn)["agent_demo"]
        assert "agent_demo_extra_idx" in {n.lower() for n in index_names(conn)}
    assert ensure_tables(engine, v2) == 0
    engine.dispose()


def test_an_index_created_by_hand_under_the_same_name_is_left_alone(sql_url: str) -> None:
    engine = create_engine(sql_url)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "CREATE TABLE agent_schedules (id VARCHAR(128) PRIMARY KEY, agent VARCHAR(255) NOT NULL,"
                " run_at BIGINT NOT NULL, payload TEXT, status VARCHAR(32) NOT NULL,"
                " claimed_by VARCHAR(255), claimed_at BIGINT, created_at BIGINT NOT NULL)"
            )
        )
        conn.execute(sa.text("CREATE INDEX agent_schedules_status_run_at_idx ON agent_schedules (status)"))
    ensure_tables(engine)
    with engine.connect() as conn:
        assert set(metadata.tables) <= table_names(conn)
    assert ensure_tables(engine) == 0
    engine.dispose()


def test_alembic_upgrade_builds_the_same_schema(sql_url: str) -> None:
    assert current(sql_url) is None
    upgrade(sql_url)
    assert current(sql_url) == head()
    upgrade(sql_url)  # forward-only and idempotent
    store = SqlStore.from_url(sql_url, auto_create_tables=False)
    assert store.ensure_thread("t", owner="o").owner == "o"
    assert ensure_tables(store.engine) == 0  # migrated == auto-created
    store.close()


def test_lunora_db_upgrade_command(tmp_path: object) -> None:
    from typer.testing import CliRunner

    from lunora_jobs.cli import app

    url = f"sqlite:///{tmp_path}/cli.db"
    result = CliRunner().invoke(app, ["db", "upgrade", "--url", url])
    assert result.exit_code == 0, result.output
    assert current(url) == head()
