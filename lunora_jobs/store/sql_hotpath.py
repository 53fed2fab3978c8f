"""Fused store calls for the durable step's hot path: two operations, one round trip on PostgreSQL.

- ``complete_step_and_list_steps``: the completion (one statement) and the run's ledger read that
  follows it (the tool step's fan-in), pipelined. The read runs after the completion in the same
  implicit transaction, so it sees this step completed; a sibling that completes concurrently
  waits on the run row this completion locked, then its own read sees this step — so of two
  parallel tools at least the later one sees both done, exactly as with two round trips.

- ``claim_step_and_load_thread``: the claim (one upsert) and the thread's history read a turn
  needs, pipelined. The history is only used when the claim succeeded; on any other outcome the
  plain ``claim_step`` runs to explain it (busy, completed, exhausted, ...).

Other dialects (and ``single_statement_completion = False``) make the two plain calls.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store.codec import check_identity
from lunora_jobs.store.records import MessageRecord, StepClaim, StepCompletion, StepRecord
from lunora_jobs.store.sql_pg_text import CLAIM_SQL, HISTORY_SQL, LEDGER_SQL
from lunora_jobs.store.sql_pipeline import Record, pipelined
from lunora_jobs.store.sql_rows import message_record, step_record
from lunora_jobs.store.sql_steps import SqlStepsMixin


class SqlHotPathMixin(SqlStepsMixin):
    """Fused hot-path operations of ``SqlStore``."""

    def complete_step_and_list_steps(
        self, run_id: str, name: str, generation: int, completion: StepCompletion
    ) -> tuple[bool, list[StepRecord]]:
        """``complete_step`` then ``list_steps``: one round trip on PostgreSQL, two elsewhere."""
        if self.dialect != "postgresql" or not self.single_statement_completion:
            return self.complete_step(run_id, name, generation, completion), self.list_steps(run_id)
        self._prepare()
        sql, params = self._pg_completion(run_id, name, generation, completion)

        def work(conn: Connection) -> tuple[bool, list[StepRecord]]:
            done, ledger = pipelined(conn, [(sql, params), (LEDGER_SQL, {"run_id": run_id})])
            return done[0]["count"] == 1, [step_record(Record(row)) for row in ledger]

        return self._write(work, autocommit=True)

    def claim_step_and_load_thread(
        self, run_id: str, name: str, thread_id: str, *, owner: str, lease_ms: int, max_attempts: int = 5
    ) -> tuple[StepClaim, list[MessageRecord] | None]:
        """``claim_step``, and when it claimed, ``load_thread_for_turn(thread_id)``: one round trip on
        PostgreSQL. The history is None when the step was not claimed (it would not be used)."""
        if self.dialect != "postgresql":
            claim = self.claim_step(run_id, name, owner=owner, lease_ms=lease_ms, max_attempts=max_attempts)
            return claim, self.load_thread_for_turn(thread_id) if claim.outcome == "claimed" else None
        check_identity("step name", name)
        check_identity("lease owner", owner)
        self._prepare()
        now = self.clock()
        params = {"run_id": run_id, "name": name, "owner": owner, "expires": now + lease_ms, "now": now,
                  "max_attempts": max_attempts}

        def work(conn: Connection) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            claimed, history = pipelined(conn, [(CLAIM_SQL, params), (HISTORY_SQL, {"thread_id": thread_id})])
            return claimed, history

        try:
            claimed, history = self._write(work, autocommit=True)
        except IntegrityError as exc:
            raise NotFoundError(f"no run {run_id!r}; create the run before claiming its steps") from exc
        if not claimed:  # busy, completed, exhausted, failed — or a lost race: the full claim says which
            claim = self.claim_step(run_id, name, owner=owner, lease_ms=lease_ms, max_attempts=max_attempts)
            return claim, self.load_thread_for_turn(thread_id) if claim.outcome == "claimed" else None
        messages = [message_record(Record(row)) for row in history]
        return StepClaim("claimed", step_record(Record(claimed[0]))), messages
