"""Fused store calls for the durable step's hot path: two operations, one round trip on PostgreSQL.

- ``complete_step_and_list_steps``: the completion (one statement) and the run's ledger read that
  follows it (the tool step's fan-in), pipelined. The read runs after the completion in the same
  implicit transaction, so it sees this step completed; a sibling that completes concurrently
  waits on the run row this completion locked, then its own read sees this step — so of two
  parallel tools at least the later one sees both done, exactly as with two round trips.

- ``claim_step_and_load_thread``: the claim (one upsert) and the thread's history read a turn
  needs, pipelined. The history is only used when the claim succeeded; on any other outcome the
  plain ``claim_step`` runs to explain it (busy, completed, exhausted, ...).

- ``read_run_and_claim_tool``: the same for a tool step — the run with its latest turn's memo
  (the joined read of ``get_run_with_latest_turn``) and a claim conditioned on that memo holding
  the call, ungated (``TOOL_CLAIM_SQL``), as ONE statement (``tool_read_claim_sql``).

- ``read_run_and_claim_turn``: a whole turn's reads and claim in ONE statement — the run, a claim
  conditioned on what the engine checks in the run before claiming (not terminal, ``turn`` turns
  done, one of the given agents), and the thread history (``TURN_READ_CLAIM_SQL``). When the
  condition or the claim fails, no claim is returned and the engine continues the plain way with
  the run it got.

- ``create_run_on_free_thread``: a run's start on a free thread — the thread's get-or-create, the
  taking of its active-run slot and the run with its opening — as ONE statement
  (``free_thread_opening_sql``). When the thread is not free nothing is written and the engine
  starts the plain way (``ensure_thread``, ``admit``, ``create_run``), which explains or queues.

Other dialects (and ``single_statement_completion = False``) make the two plain calls; a start on
another dialect is always the plain one.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.exc import IntegrityError

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store._codec import check_identity
from lunora_jobs.store.records import (
    JSON,
    MessageRecord,
    NewRun,
    RunOpening,
    RunRecord,
    StepClaim,
    StepCompletion,
    StepRecord,
    ThreadRecord,
)
from lunora_jobs.store.sql._postgres.opening import free_thread_opening_sql
from lunora_jobs.store.sql._postgres.pipeline import Record
from lunora_jobs.store.sql._postgres.statements import (
    CLAIM_SQL,
    HISTORY_SQL,
    LEDGER_NAMES_SQL,
    LEDGER_SQL,
    TURN_READ_CLAIM_SQL,
    tool_read_claim_sql,
)
from lunora_jobs.store.sql._rows import message_record, run_record, step_record, thread_record
from lunora_jobs.store.sql._runs import new_run_row, pg_text, run_and_latest_turn
from lunora_jobs.store.sql._steps import SqlStepsMixin
from lunora_jobs.store.sql._threads import new_thread_row


class SqlFusedCallsMixin(SqlStepsMixin):
    """Fused hot-path operations of ``SqlStore``."""

    def complete_step_and_list_steps(
        self, run_id: str, name: str, generation: int, completion: StepCompletion,
        names: Sequence[str] | None = None,
    ) -> tuple[bool, list[StepRecord]]:
        """``complete_step`` then ``list_steps``: one round trip on PostgreSQL, two elsewhere.

        ``names``: only these ledger rows are needed (PostgreSQL then reads just them, not a long
        run's whole ledger); other dialects may return more rows, never fewer.
        """
        if self.dialect != "postgresql" or not self.single_statement_completion:
            return self.complete_step(run_id, name, generation, completion), self.list_steps(run_id)
        self._prepare()
        sql, params = self._pg_completion(run_id, name, generation, completion)
        read = (LEDGER_SQL, {"run_id": run_id}) if names is None else (
            LEDGER_NAMES_SQL, {"run_id": run_id, "names": list(names)})

        done, ledger = self._pipeline([(sql, params), read])
        return done[0]["count"] == 1, [step_record(Record(row)) for row in ledger]

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

        try:
            claimed, history = self._pipeline([(CLAIM_SQL, params), (HISTORY_SQL, {"thread_id": thread_id})])
        except IntegrityError as exc:
            raise NotFoundError(f"no run {run_id!r}; create the run before claiming its steps") from exc
        if not claimed:  # busy, completed, exhausted, failed — or a lost race: the full claim says which
            claim = self.claim_step(run_id, name, owner=owner, lease_ms=lease_ms, max_attempts=max_attempts)
            return claim, self.load_thread_for_turn(thread_id) if claim.outcome == "claimed" else None
        messages = [message_record(Record(row)) for row in history]
        return StepClaim("claimed", step_record(Record(claimed[0]))), messages

    def read_run_and_claim_turn(
        self, run_id: str, name: str, turn: int, *, agents: list[str], owner: str, lease_ms: int,
        max_attempts: int,
    ) -> tuple[RunRecord | None, StepClaim | None, list[MessageRecord] | None]:
        """The run; the claim of turn step ``name`` if the run allows it (see ``TURN_CLAIM_SQL``);
        and then the thread history. One round trip on PostgreSQL; elsewhere only the run is read.

        ``(None, None, None)``: no such run. A None claim: not claimed — the caller checks the run
        and claims the plain way (which explains busy / completed / ...).
        """
        if self.dialect != "postgresql":
            return self.get_run(run_id), None, None  # type: ignore[attr-defined]
        check_identity("step name", name)
        check_identity("lease owner", owner)
        self._prepare()
        now = self.clock()
        params = {"run_id": run_id, "name": name, "owner": owner, "expires": now + lease_ms, "now": now,
                  "max_attempts": max_attempts, "turn": turn, "agents": agents}

        (row,) = self._pipeline([(TURN_READ_CLAIM_SQL, params)])[0]
        if row["run"] is None:
            return None, None, None
        run = run_record(Record(row["run"]))
        if row["claim"] is None:
            return run, None, None
        messages = [message_record(Record(message)) for message in row["history"] or ()]
        return run, StepClaim("claimed", step_record(Record(row["claim"]))), messages

    def read_run_and_claim_tool(
        self, run_id: str, name: str, call_id: str, *, agents: list[str], owner: str, lease_ms: int,
        max_attempts: int,
    ) -> tuple[RunRecord | None, StepRecord | None, StepClaim | None]:
        """The run, its latest turn's ledger row, and the claim of tool step ``name`` if that turn
        made call ``call_id`` ungated and the run allows it (``TOOL_CLAIM_SQL``). One round trip on
        PostgreSQL; elsewhere ``get_run_with_latest_turn`` and no claim (the caller claims)."""
        if self.dialect != "postgresql":
            run, latest = self.get_run_with_latest_turn(run_id)  # type: ignore[attr-defined]
            return run, latest, None
        check_identity("step name", name)
        check_identity("lease owner", owner)
        self._prepare()
        now = self.clock()
        read_sql, consts = pg_text("run_with_latest_turn")
        params = {"run_id": run_id, "name": name, "owner": owner, "expires": now + lease_ms, "now": now,
                  "max_attempts": max_attempts, "call_id": call_id, "agents": agents}

        (row,) = self._pipeline([(tool_read_claim_sql(read_sql), {**consts, **params})])[0]
        run, latest = run_and_latest_turn(None if row["read"] is None else Record(row["read"]))
        claimed = row["claim"]
        claim = StepClaim("claimed", step_record(Record(claimed))) if claimed and run is not None else None
        return run, latest, claim

    def create_run_on_free_thread(
        self, key: str, run: NewRun, opening: RunOpening, *, title: str | None = None,
        initial_state: JSON = None,
    ) -> ThreadRecord | None:
        """On PostgreSQL, in ONE statement: ``ensure_thread(key, owner=run.owner, title=...,
        agent=run.agent, initial_state=...)``, ``acquire_thread`` for ``run.id`` and
        ``create_run(run, opening)`` — taken only when the thread is free: new, or with no active run,
        no queued run, and exactly ``run.owner`` as its owner (both may be None). The thread as written
        (held by ``run.id``) when the run was created; None when not (another dialect, or a thread
        that is not free): nothing was written, and the caller starts the plain way.

        ``run.id`` must be new (a replayed id goes the plain way); ``run.thread_id`` is not read: the
        run is recorded on the thread of ``key``. ``opening.enqueue`` must be False.
        """
        if self.dialect != "postgresql":
            return None
        for what, value in (("thread key", key), ("run id", run.id), ("owner", run.owner),
                            ("tenant", run.tenant), ("agent", run.agent)):
            check_identity(what, value)
        now = self.clock()
        thread_row = new_thread_row(key, run.owner, title, run.agent, None, initial_state, now)
        sql, params = free_thread_opening_sql(thread_row, new_run_row(run, now), opening, now)
        written = self._pipeline([(sql, params)])[0]
        return thread_record(Record(written[0])) if written else None
