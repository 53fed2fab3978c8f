"""The step ledger over SQL: claim with a fenced lease, complete in one transaction, fail, read.

A claim is one statement where the dialect allows: Postgres and SQLite run
``INSERT ... ON CONFLICT (run_id, name) DO UPDATE ... WHERE <running, lease expired, attempts left>
RETURNING``; only when nothing comes back does a SELECT explain why (completed, busy, ...).
MySQL/MariaDB has no conditional upsert with RETURNING, so it inserts, and on a duplicate runs the
conditional UPDATE, then reads.

A completion is one transaction: the fenced UPDATE of the step (``generation`` and ``running``),
then the thread row (seqs, ``updated_at``, patch, ``add_*`` totals), one multi-row INSERT of the
messages, the usage row and the run patch — one commit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from functools import partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store._codec import THREAD_ADD, THREAD_JSON, THREAD_SET, check_identity, dump, split_patch
from lunora_jobs.store._rules import explain, unique_by_key
from lunora_jobs.store.records import StepClaim, StepCompletion, StepRecord
from lunora_jobs.store.schema import runs, steps, threads, token_usage
from lunora_jobs.store.sql._messages import SqlMessagesMixin
from lunora_jobs.store.sql._postgres.completion import completion_sql
from lunora_jobs.store.sql._postgres.statements import CLAIM_SQL
from lunora_jobs.store.sql._rows import step_record, usage_row
from lunora_jobs.store.sql._runs import run_values


class RunCancelled(Exception):
    """Raised inside a completion's transaction to roll it back: the run was cancelled meanwhile."""


class SqlStepsMixin(SqlMessagesMixin):
    """Step-ledger operations of ``SqlStore``."""

    def _step(self, conn: Connection, run_id: str, name: str) -> StepRecord | None:
        row = conn.execute(sa.select(steps).where(steps.c.run_id == run_id, steps.c.name == name)).first()
        return None if row is None else step_record(row)

    def claim_step(
        self, run_id: str, name: str, *, owner: str, lease_ms: int, max_attempts: int = 5
    ) -> StepClaim:
        """Claim a step: insert it, or take over an expired lease (``attempt += 1``, new generation)."""
        check_identity("step name", name)
        check_identity("lease owner", owner)
        for _ in range(5):
            now = self.clock()
            fresh: dict[str, Any] = {
                "run_id": run_id,
                "name": name,
                "status": "running",
                "result": None,
                "error": None,
                "attempt": 1,
                "generation": 1,
                "lease_owner": owner,
                "lease_expires_at": now + lease_ms,
                "created_at": now,
                "updated_at": now,
            }
            takeover = sa.and_(
                steps.c.status == "running", steps.c.lease_expires_at <= now, steps.c.attempt < max_attempts
            )
            bump: dict[str, Any] = {
                "attempt": steps.c.attempt + 1,
                "generation": steps.c.generation + 1,
                "lease_owner": owner,
                "lease_expires_at": now + lease_ms,
                "updated_at": now,
            }
            if self.dialect == "postgresql":  # the same upsert as SQL text: no statement building per step
                params = {"run_id": run_id, "name": name, "owner": owner, "expires": now + lease_ms,
                          "now": now, "max_attempts": max_attempts}
                work: Callable[[Connection], tuple[bool, StepRecord]] = partial(self._claim_pg, params)
            else:
                work = partial(self._claim, fresh=fresh, takeover=takeover, bump=bump)
            try:
                claimed, current = self._write(
                    work, autocommit=self.dialect != "mysql"  # elsewhere one upsert statement does it all
                )
            except IntegrityError as exc:
                raise NotFoundError(f"no run {run_id!r}; create the run before claiming its steps") from exc
            if claimed:
                return StepClaim("claimed", current)
            outcome = explain(current, now, max_attempts)
            if outcome is not None:
                return StepClaim(outcome, current)
        return StepClaim("busy", current)

    def _claim_pg(self, params: dict[str, Any], conn: Connection) -> tuple[bool, StepRecord]:
        row = conn.exec_driver_sql(CLAIM_SQL, params).first()
        if row is not None:
            return True, step_record(row)
        current = self._step(conn, str(params["run_id"]), str(params["name"]))
        if current is None:  # pragma: no cover - deleted between the two statements
            raise NotFoundError(f"no run {params['run_id']!r}; create the run before claiming its steps")
        return False, current

    def _claim(
        self,
        conn: Connection,
        fresh: dict[str, object],
        takeover: sa.ColumnElement[bool],
        bump: dict[str, object],
    ) -> tuple[bool, StepRecord]:
        run_id, name = str(fresh["run_id"]), str(fresh["name"])
        if self.dialect != "mysql":
            ins = self._insert(steps).values(fresh)
            stmt = ins.on_conflict_do_update(index_elements=["run_id", "name"], set_=bump, where=takeover)
            row = conn.execute(stmt.returning(*steps.c)).first()
            if row is not None:
                return True, step_record(row)
        else:
            # No savepoint needed: MySQL rolls back only the failed statement, not the transaction.
            try:
                conn.execute(sa.insert(steps).values(fresh))
                return True, step_record_from(fresh)
            except IntegrityError as exc:
                if conn.execute(sa.select(runs.c.id).where(runs.c.id == run_id)).first() is None:
                    raise NotFoundError(
                        f"no run {run_id!r}; create the run before claiming its steps"
                    ) from exc
            where = sa.and_(steps.c.run_id == run_id, steps.c.name == name, takeover)
            if conn.execute(sa.update(steps).where(where).values(bump)).rowcount == 1:
                current = self._step(conn, run_id, name)
                assert current is not None
                return True, current
        current = self._step(conn, run_id, name)
        if current is None:  # pragma: no cover - deleted between the two statements
            raise NotFoundError(f"no run {run_id!r}; create the run before claiming its steps")
        return False, current

    def complete_step(self, run_id: str, name: str, generation: int, completion: StepCompletion) -> bool:
        """Record the result with its messages/usage/patches in one transaction.

        Returns False (and writes nothing) when ``generation`` is no longer current.
        On PostgreSQL it is one autocommit statement (``_postgres.completion``): one round trip.
        """
        if self.dialect == "postgresql" and self.single_statement_completion:
            sql, params = self._pg_completion(run_id, name, generation, completion)
            return bool(self._pipeline([(sql, params)])[0][0]["count"] == 1)
        batch = unique_by_key(completion.messages)
        t_sets, t_adds = split_patch(completion.thread_patch or {}, THREAD_SET, THREAD_ADD, "thread")
        t_sets = {k: dump(v) if k in THREAD_JSON else v for k, v in t_sets.items()}
        now = self.clock()
        run_patch = run_values(completion.run_patch, now) if completion.run_patch else None
        fenced = sa.and_(
            steps.c.run_id == run_id,
            steps.c.name == name,
            steps.c.generation == generation,
            steps.c.status == "running",
            # A cancelled run applies no further result (the run UPDATE below closes the race).
            sa.exists().where(runs.c.id == run_id, runs.c.status != "cancelled"),
        )
        done = (
            sa.update(steps)
            .where(fenced)
            .values(status="completed", result=dump(completion.result), error=None, updated_at=now)
        )
        thread_of_run = sa.select(runs.c.thread_id).where(runs.c.id == run_id).scalar_subquery()
        run_thread = threads.c.id == thread_of_run

        usage = None if completion.usage is None else usage_row(self._costed(completion.usage, now), now)

        def work(conn: Connection) -> bool:
            if conn.execute(done).rowcount != 1:
                return False
            if batch or t_sets or t_adds:
                self._append_in(conn, run_thread, batch, now, t_sets, t_adds)
            if usage is not None:
                row = {**usage, "thread_id": usage["thread_id"] or thread_of_run}
                conn.execute(sa.insert(token_usage).values(row))
            if run_patch:
                live = sa.update(runs).where(runs.c.id == run_id, runs.c.status != "cancelled")
                if conn.execute(live.values(run_patch)).rowcount != 1:
                    raise RunCancelled  # cancelled since the step UPDATE: roll the completion back
            return True

        try:
            return self._write(work)
        except RunCancelled:
            return False

    def _pg_completion(
        self, run_id: str, name: str, generation: int, completion: StepCompletion
    ) -> tuple[str, dict[str, Any]]:
        """``complete_step`` on PostgreSQL: one statement and its parameters (``_postgres.completion``)."""
        batch = unique_by_key(completion.messages)
        t_sets, t_adds = split_patch(completion.thread_patch or {}, THREAD_SET, THREAD_ADD, "thread")
        t_sets = {k: dump(v) if k in THREAD_JSON else v for k, v in t_sets.items()}
        now = self.clock()
        usage = None if completion.usage is None else usage_row(self._costed(completion.usage, now), now)
        return completion_sql(
            run_id, name, generation, now, dump(completion.result), batch,
            t_sets if batch or t_sets or t_adds else None, t_adds, usage, completion.run_patch,
        )

    def fail_step(
        self, run_id: str, name: str, generation: int, error: str, *, terminal: bool = False,
        retry_at: int = 0,
    ) -> bool:
        """Record an error. Not terminal: release the lease so a retry can claim at ``retry_at``
        (epoch ms; 0: at once). Fenced like complete."""
        fenced = sa.and_(
            steps.c.run_id == run_id,
            steps.c.name == name,
            steps.c.generation == generation,
            steps.c.status == "running",
        )
        values = {"error": error, "updated_at": self.clock(), "lease_expires_at": 0 if terminal else retry_at}
        if terminal:
            values["status"] = "failed"
        stmt = sa.update(steps).where(fenced).values(values)
        return bool(self._write(lambda conn: conn.execute(stmt).rowcount == 1))

    def renew_lease(self, run_id: str, name: str, generation: int, lease_ms: int) -> bool:
        """Extend a running step's lease to now + ``lease_ms``; False when fenced out. Only the
        heartbeat of a step that outlives the renewal threshold calls it: never on the hot path."""
        stmt = (
            sa.update(steps)
            .where(steps.c.run_id == run_id, steps.c.name == name, steps.c.generation == generation,
                   steps.c.status == "running")
            .values(lease_expires_at=self.clock() + lease_ms)
        )
        return bool(self._write(lambda conn: conn.execute(stmt).rowcount == 1, autocommit=True))

    def reclaim_step(
        self, run_id: str, name: str, generation: int, *, owner: str, lease_ms: int, max_attempts: int = 5
    ) -> StepClaim:
        """Take over ``owner``'s own lease of ``generation`` at once; else a plain ``claim_step``."""
        now = self.clock()
        mine = sa.and_(
            steps.c.run_id == run_id, steps.c.name == name, steps.c.generation == generation,
            steps.c.status == "running", steps.c.lease_owner == owner, steps.c.attempt < max_attempts,
        )
        stmt = sa.update(steps).where(mine).values(
            attempt=steps.c.attempt + 1, generation=steps.c.generation + 1,
            lease_expires_at=now + lease_ms, updated_at=now,
        )
        if self._write(lambda conn: conn.execute(stmt).rowcount == 1):
            current = self.get_step(run_id, name)
            if current is not None and current.generation == generation + 1 and current.lease_owner == owner:
                return StepClaim("claimed", current)
        return self.claim_step(run_id, name, owner=owner, lease_ms=lease_ms, max_attempts=max_attempts)

    def get_step(self, run_id: str, name: str) -> StepRecord | None:
        """The ledger row, or None."""
        return self._query(lambda conn: self._step(conn, run_id, name))

    def list_steps(self, run_id: str) -> list[StepRecord]:
        """Every ledger row of the run, in creation order."""
        query = sa.select(steps).where(steps.c.run_id == run_id).order_by(steps.c.created_at, steps.c.name)
        return self._query(lambda conn: [step_record(row) for row in conn.execute(query)])


def step_record_from(values: dict[str, Any]) -> StepRecord:
    """A record from the values just inserted (saves a read)."""
    return StepRecord(**{f.name: values[f.name] for f in fields(StepRecord)})
