"""Migrations that migrate: frozen revisions, data kept across an upgrade, head == ensure_tables.

On PostgreSQL, MariaDB and SQLite: a database created at revision 0001 and holding a run upgrades to
head without losing a row, and the schema the revisions build is the one ``ensure_tables`` builds —
tables, columns (type, nullability) and indexes (columns, uniqueness).
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from lunora_jobs.cli import app as cli
from lunora_jobs.store import NewMessage, SqlStore, StepCompletion, create_engine, ensure_tables
from lunora_jobs.store.migrations import current, head, upgrade

pytestmark = pytest.mark.integration


def _fill_at_0001(url: str) -> dict[str, int]:
    """A conversation written by the store against the 0001 schema (no run queue yet)."""
    store = SqlStore.from_url(url, auto_create_tables=False)
    thread = store.ensure_thread("t-old", owner="u7", initial_state={"step": 1})
    with store.engine.begin() as conn:  # a run as 0001 wrote it (today's store writes 0007's tenant)
        conn.execute(sa.text(
            "INSERT INTO agent_runs (id, thread_id, agent, owner, status, input, turns, input_tokens,"
            " output_tokens, created_at, updated_at)"
            " VALUES ('r-old', :thread, 'support', 'u7', 'running', '\"hi\"', 0, 0, 0, 1, 1)"
        ), {"thread": thread.id})
    claim = store.claim_step("r-old", "llm:turn:0", owner="w", lease_ms=60_000)
    completion = StepCompletion(
        result={"turn": 0},
        messages=[NewMessage(key="r-old:user:0", role="user", content="hi", run_id="r-old"),
                  NewMessage(key="r-old:assistant:0", role="assistant", content="hello", run_id="r-old")],
        run_patch={"status": "completed", "add_turns": 1},
    )
    assert store.complete_step("r-old", "llm:turn:0", claim.step.generation, completion)
    store.upsert_tool_call(thread.id, "r-old", "c1", name="lookup", input={"q": 1}, status="done")
    with store.engine.begin() as conn:  # a delayed run as 0001 wrote it (today's store writes 0005's columns)
        conn.execute(sa.text(
            "INSERT INTO agent_schedules (id, agent, run_at, payload, status, created_at)"
            " VALUES ('s-old', 'support', 1700000000000, '{\"input\":\"later\"}', 'pending', 1)"
        ))
    counts = _counts(store.engine)
    store.close()
    return counts


def _counts(engine: sa.engine.Engine) -> dict[str, int]:
    tables = ["agent_threads", "agent_runs", "agent_steps", "agent_messages", "agent_tool_calls",
              "agent_schedules"]
    with engine.connect() as conn:
        return {t: conn.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables}


def test_a_database_at_0001_with_data_upgrades_to_head_without_losing_a_row(sql_url: str) -> None:
    upgrade(sql_url, "0001")
    assert current(sql_url) == "0001"
    engine = create_engine(sql_url)
    assert not sa.inspect(engine).has_table("agent_run_queue")  # 0001 is frozen: no later table
    before = _fill_at_0001(sql_url)
    assert all(before.values())

    upgrade(sql_url)
    assert current(sql_url) == head()
    assert _counts(engine) == before
    store = SqlStore.from_url(sql_url, auto_create_tables=False)
    thread = store.get_thread("t-old")
    assert thread is not None and thread.state == {"step": 1}
    assert [m.content for m in store.list_messages(thread.id)] == ["hi", "hello"]
    run = store.get_run("r-old")
    assert run is not None and (run.status, run.turns) == ("completed", 1)
    store.enqueue_run(thread.id, "r-old")  # the table 0002 added works
    assert store.queued_runs(thread.id) == ["r-old"]
    old = store.get_schedule("s-old")  # 0005: its occurrence time is its due time
    assert old is not None and (old.kind, old.due_at, old.attempts, old.payload) == (
        "once", 1_700_000_000_000, 0, {"input": "later"})
    assert [s.id for s in store.claim_due_schedules(1_700_000_000_000, 10, "beat")] == ["s-old"]
    store.close()
    engine.dispose()


# Spellings of one storage type: on SQLite (REAL affinity) and PostgreSQL (float8) a FLOAT column is
# the DOUBLE a later revision declares; on MySQL FLOAT is single precision, so there it stays apart.
_SAME_TYPE = {"sqlite": {"FLOAT": "DOUBLE"}, "postgresql": {"FLOAT": "DOUBLE PRECISION"}}


def _shape(engine: sa.engine.Engine) -> dict[str, Any]:
    inspector = sa.inspect(engine)
    same = _SAME_TYPE.get(engine.dialect.name, {})
    shape: dict[str, Any] = {}
    for table in sorted(t for t in inspector.get_table_names() if t.startswith("agent_")):
        types = {c["name"]: str(c["type"]).split("(")[0].upper() for c in inspector.get_columns(table)}
        columns = {c["name"]: (same.get(types[c["name"]], types[c["name"]]), c["nullable"])
                   for c in inspector.get_columns(table)}
        indexes = {str(i["name"]).lower(): (tuple(i["column_names"]), bool(i["unique"]))
                   for i in inspector.get_indexes(table)}
        shape[table] = {"columns": columns, "indexes": indexes,
                        "pk": tuple(inspector.get_pk_constraint(table)["constrained_columns"])}
    return shape


def test_the_migrated_schema_is_the_one_ensure_tables_builds(sql_url: str, tmp_path: Any) -> None:
    upgrade(sql_url)
    migrated = create_engine(sql_url)
    if sql_url.startswith("sqlite"):
        other_url = f"sqlite:///{tmp_path}/ensured.db"
    else:  # a second database on the same server: swap the name
        other_url = sql_url + "_e"
        admin = create_engine(sa.engine.make_url(sql_url).set(
            database="postgres" if sql_url.startswith("postgresql") else "mysql").render_as_string(False),
            isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {sa.engine.make_url(other_url).database}"))
    ensured = create_engine(other_url)
    try:
        ensure_tables(ensured)
        assert _shape(migrated) == _shape(ensured)
        assert len(_shape(migrated)) == 16  # 0008 added agent_outbox and agent_declarations
    finally:
        migrated.dispose()
        ensured.dispose()
        if not sql_url.startswith("sqlite"):
            with admin.connect() as conn:
                conn.execute(sa.text(f"DROP DATABASE {sa.engine.make_url(other_url).database}"))
            admin.dispose()


def test_a_database_provisioned_by_ensure_tables_upgrades_in_place(sql_url: str) -> None:
    store = SqlStore.from_url(sql_url)  # auto_create_tables: provisioned before any migration ran
    thread = store.ensure_thread("t", owner="o")
    upgrade(sql_url)
    assert current(sql_url) == head()
    assert store.get_thread_by_id(thread.id) is not None
    assert ensure_tables(store.engine) == 0
    store.close()


def test_lunora_db_upgrade_and_current_say_what_they_did(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path}/cli.db"
    runner = CliRunner()
    fresh = runner.invoke(cli, ["db", "current", "--url", url])
    assert fresh.exit_code == 0 and "no revision yet" in fresh.output and "lunora db upgrade" in fresh.output
    first = runner.invoke(cli, ["db", "upgrade", "--url", url])
    assert first.exit_code == 0 and f"upgraded from an empty database to revision {head()}" in first.output
    again = runner.invoke(cli, ["db", "upgrade", "--url", url])
    assert again.exit_code == 0 and "already at revision" in again.output
    now = runner.invoke(cli, ["db", "current", "--url", url])
    assert now.exit_code == 0 and f"at revision {head()} (the latest)" in now.output


def test_a_failing_db_command_prints_one_line_and_the_fix(tmp_path: Any) -> None:
    result = CliRunner().invoke(cli, ["db", "upgrade", "--url", "postgresql://nobody@127.0.0.1:1/none"])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--debug" in lines[0]
