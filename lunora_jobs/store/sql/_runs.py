"""Runs over SQL: create (idempotent on id), read, patch (sets and ``add_*`` increments), list.

``transition_run`` is a compare-and-set on a run's status, so a cancel and a finishing step can race
and exactly one of them decides how the run ended (neither overwrites the other).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from functools import cache
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store._codec import RUN_ADD, RUN_JSON, RUN_SET, check_identity, dump, split_patch
from lunora_jobs.store.records import NewRun, RunOpening, RunRecord, StepRecord
from lunora_jobs.store.schema import outbox, run_queue, runs, steps, threads
from lunora_jobs.store.sql._messages import SqlMessagesMixin
from lunora_jobs.store.sql._postgres.opening import opening_sql
from lunora_jobs.store.sql._postgres.pipeline import Record
from lunora_jobs.store.sql._rows import run_record, step_record


def run_values(patch: Mapping[str, Any], now: int) -> dict[str, Any]:
    """The UPDATE values of a run patch (see ``_codec`` for the keys)."""
    sets, adds = split_patch(patch, RUN_SET, RUN_ADD, "run")
    values: dict[str, Any] = {k: dump(v) if k in RUN_JSON else v for k, v in sets.items()}
    for column, amount in adds.items():
        values[column] = runs.c[column] + amount
    values["updated_at"] = now
    return values


_LATEST_TURN = sa.and_(
    steps.c.run_id == runs.c.id,
    steps.c.name == sa.literal("llm:turn:") + sa.cast(runs.c.turns - 1, sa.String),
    runs.c.turns > 0,
)


def _run_joined_to(turn: Any, on: Any) -> Any:
    """The run, LEFT JOIN ``turn`` (``agent_steps`` or a subquery of it) ``on``, its columns as ``step_*``."""
    return (
        sa.select(runs, *[turn.c[c.name].label(f"step_{c.name}") for c in steps.c])
        .select_from(runs.outerjoin(turn, on))
        .where(runs.c.id == sa.bindparam("run_id"))
    )


_RUN_WITH_LATEST_TURN = _run_joined_to(steps, _LATEST_TURN)
"""The run LEFT JOIN its latest turn's ledger row (SQLite, MySQL / MariaDB)."""

# On PostgreSQL the turn's row comes from a LATERAL subquery with LIMIT 1, which the planner does not
# flatten: a (run_id, name) probe of the primary key. As a plain join, the run_id = :run_id the join
# implies made the planner scan the run's whole ledger by run_id and filter the names, so a tool
# step's read grew with the run's length (also in the generic plan of the prepared statement).
_LATEST_TURN_ROW = sa.select(steps).where(_LATEST_TURN).limit(1).lateral("latest_turn")
_PG_RUN_WITH_LATEST_TURN = _run_joined_to(_LATEST_TURN_ROW, sa.true())
"""``_RUN_WITH_LATEST_TURN`` on PostgreSQL: the same row, the turn found by one index probe."""


@cache
def pg_text(name: str) -> tuple[str, dict[str, Any]]:
    """A hot-path read compiled once for PostgreSQL: (SQL text, constant parameters). Run through
    ``exec_driver_sql``, it skips SQLAlchemy's per-call statement cache-key and compile lookup."""
    from sqlalchemy.dialects.postgresql import psycopg

    stmt = {"run": sa.select(runs).where(runs.c.id == sa.bindparam("run_id")),
            "run_with_latest_turn": _PG_RUN_WITH_LATEST_TURN}[name]
    compiled = stmt.compile(dialect=psycopg.dialect())  # type: ignore[no-untyped-call]
    return compiled.string, {k: v for k, v in compiled.params.items() if k != "run_id"}


def run_and_latest_turn(row: Any) -> tuple[RunRecord | None, StepRecord | None]:
    """Decode a row of ``_RUN_WITH_LATEST_TURN`` (None: no such run)."""
    if row is None:
        return None, None
    m = row._mapping
    if m["step_name"] is None:
        return run_record(row), None
    step = SimpleNamespace(_mapping={c.name: m[f"step_{c.name}"] for c in steps.c})
    return run_record(row), step_record(step)


def new_run_row(run: NewRun, now: int) -> dict[str, Any]:
    """Every ``agent_runs`` column of the new run ``run``."""
    return {
        "id": run.id,
        "thread_id": run.thread_id,
        "agent": run.agent,
        "owner": run.owner,
        "tenant": run.tenant,
        "status": run.status,
        "input": dump(run.input),
        "result": None,
        "error": None,
        "stopped": None,
        "turns": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "created_at": now,
        "updated_at": now,
    }


class SqlRunsMixin(SqlMessagesMixin):
    """Run operations of ``SqlStore``."""

    def create_run(self, run: NewRun, opening: RunOpening | None = None) -> RunRecord:
        """Insert a run; idempotent on ``run.id`` (returns the existing one). ``opening``: what starts
        with it, in the same transaction (see ``RunOpening``). On PostgreSQL, one statement
        (``_postgres.opening``)."""
        check_identity("run id", run.id)
        check_identity("owner", run.owner)
        check_identity("tenant", run.tenant)
        check_identity("agent", run.agent)
        now = self.clock()
        row = new_run_row(run, now)
        if self.dialect == "postgresql":  # the run and its opening in one statement: one round trip
            sql, params = opening_sql(row, opening or RunOpening(), now)
            try:
                created = self._pipeline([(sql, params)])[0]
            except IntegrityError as exc:
                raise NotFoundError(f"no thread {run.thread_id!r} for run {run.id!r}") from exc
            found = run_record(Record(created[0])) if created else self.get_run(run.id)
            assert found is not None
            return found
        returning = self._inserts_returning()

        def work(conn: Connection) -> RunRecord | None:
            stmt = self._insert_ignore(runs, ["id"])
            inserted = conn.execute(stmt.returning(*runs.c) if returning else stmt, row)
            created = inserted.first() if returning else None
            if opening is not None:
                self._open_in(conn, run, opening, now)
            return None if created is None else run_record(created)

        try:
            found = self._write(work)
        except IntegrityError as exc:
            raise NotFoundError(f"no thread {run.thread_id!r} for run {run.id!r}") from exc
        if found is None:  # it existed already (or no RETURNING here): read what is stored
            found = self.get_run(run.id)
        assert found is not None
        return found

    def _open_in(self, conn: Connection, run: NewRun, opening: RunOpening, now: int) -> None:
        """Write ``opening`` inside the run's transaction: the message with the thread's status (one
        thread UPDATE, as any append), the outbox rows, the queue row."""
        if opening.message is not None or opening.thread_status is not None:
            sets = None if opening.thread_status is None else {"status": opening.thread_status}
            batch = [] if opening.message is None else [opening.message]
            self._append_in(conn, threads.c.id == run.thread_id, batch, now, sets)
        if opening.outbox:
            rows = [{"run_id": e.run_id, "step": e.step, "kind": e.kind, "agent": e.agent, "created_at": now}
                    for e in opening.outbox]
            conn.execute(self._insert_ignore(outbox, ["run_id", "step"]), rows)
        if opening.enqueue:
            queued = {"thread_id": run.thread_id, "run_id": run.id, "created_at": now}
            conn.execute(self._insert_ignore(run_queue, ["run_id"]), queued)

    def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None."""
        if self.dialect == "postgresql":
            sql, consts = pg_text("run")
            row = self._query(lambda conn: conn.exec_driver_sql(sql, {**consts, "run_id": run_id}).first())
        else:
            query = sa.select(runs).where(runs.c.id == run_id)
            row = self._query(lambda conn: conn.execute(query).first())
        return None if row is None else run_record(row)

    def get_run_with_latest_turn(self, run_id: str) -> tuple[RunRecord | None, StepRecord | None]:
        """The run and the ledger row of its latest turn (``llm:turn:<turns - 1>``), in ONE round trip.

        What a tool step reads before its claim: the run, and the memo of the turn that made the
        call. The step is None before the first turn completed (or if its row is missing).
        """
        if self.dialect == "postgresql":
            sql, consts = pg_text("run_with_latest_turn")
            row = self._query(lambda conn: conn.exec_driver_sql(sql, {**consts, "run_id": run_id}).first())
        else:
            row = self._query(lambda conn: conn.execute(_RUN_WITH_LATEST_TURN, {"run_id": run_id}).first())
        return run_and_latest_turn(row)

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Update any of: status, result, error, stopped, turns, input_tokens, output_tokens.

        ``add_turns`` / ``add_input_tokens`` / ``add_output_tokens`` increment in the database.
        """
        stmt = sa.update(runs).where(runs.c.id == run_id).values(run_values(fields, self.clock()))

        def work(conn: Connection) -> None:
            if conn.execute(stmt).rowcount == 0:
                raise NotFoundError(f"no run {run_id!r}")

        self._write(work)

    def list_runs(
        self, *, thread_id: str | None = None, status: str | None = None, limit: int | None = None
    ) -> list[RunRecord]:
        """Runs filtered by thread and/or status, oldest first; at most ``limit`` (a LIMIT in SQL)."""
        query = sa.select(runs).order_by(runs.c.created_at, runs.c.id)
        if thread_id is not None:
            query = query.where(runs.c.thread_id == thread_id)
        if status is not None:
            query = query.where(runs.c.status == status)
        if limit is not None:
            query = query.limit(max(limit, 0))
        with self._read() as conn:
            return [run_record(row) for row in conn.execute(query)]

    def reopen_run(self, run_id: str, *, input: Any, step_names: Sequence[str]) -> bool:
        """A failed run runs again: the run back to ``running`` and ``step_names`` given fresh
        attempts, in one transaction (see ``AgentStore.reopen_run``)."""
        now = self.clock()
        reopen = (
            sa.update(runs).where(runs.c.id == run_id, runs.c.status == "failed")
            .values(status="running", error=None, stopped=None, result=None, input=dump(input),
                    updated_at=now)
        )
        fresh = (
            sa.update(steps).where(steps.c.run_id == run_id, steps.c.name.in_(list(step_names)))
            .values(status="running", attempt=0, generation=steps.c.generation + 1, lease_expires_at=0,
                    updated_at=now)
        )

        thread = (  # the run's thread says running in the same transaction (no reader sees a mix)
            sa.update(threads)
            .where(threads.c.id == sa.select(runs.c.thread_id).where(runs.c.id == run_id).scalar_subquery())
            .values(status="running", updated_at=now)
        )

        def work(conn: Connection) -> bool:
            if conn.execute(reopen).rowcount != 1:
                return False
            conn.execute(thread)
            if step_names:
                conn.execute(fresh)
            return True

        return bool(self._write(work))

    def transition_run(self, run_id: str, from_statuses: Collection[str], **fields: Any) -> bool:
        """Apply ``fields`` (as ``update_run``) only while the run's status is one of ``from_statuses``.

        Returns whether the run was updated. One conditional UPDATE: race-free on every dialect.
        """
        values = run_values(fields, self.clock())
        stmt = (
            sa.update(runs)
            .where(runs.c.id == run_id, runs.c.status.in_(list(from_statuses)))
            .values(values)
        )
        return bool(self._write(lambda conn: conn.execute(stmt).rowcount == 1))
