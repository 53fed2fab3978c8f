"""Runs, the step ledger and token usage of ``InMemoryStore`` (same semantics as the SQL mixins)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Any

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store._codec import (
    RUN_ADD,
    RUN_SET,
    THREAD_ADD,
    THREAD_SET,
    Clock,
    check_identity,
    dump,
    load,
    split_patch,
    utc_day,
)
from lunora_jobs.store._rules import explain
from lunora_jobs.store.records import (
    NewMessage,
    NewRun,
    OutboxEntry,
    RunOpening,
    RunRecord,
    StepClaim,
    StepCompletion,
    StepRecord,
    ThreadRecord,
    UsageEntry,
    UsageTotals,
)


class MemoryLedgerMixin:
    """Run, step and usage operations over the dicts ``InMemoryStore`` owns."""

    clock: Clock
    _lock: threading.RLock
    _threads: dict[str, ThreadRecord]
    _runs: dict[str, RunRecord]
    _steps: dict[tuple[str, str], StepRecord]
    _usage: list[UsageEntry]
    _costed: Callable[[UsageEntry, int], UsageEntry]  # MemoryPricingMixin
    enqueue_run: Callable[[str, str], None]  # MemoryRunQueueMixin

    def _init_ledger(self) -> None:
        self._usage = []
        self._outbox: dict[tuple[str, str], OutboxEntry] = {}  # (run_id, step) -> entry

    def _append(self, thread_id: str, batch: Sequence[NewMessage], now: int) -> None:
        raise NotImplementedError

    def _patch_thread(self, thread_id: str, fields: dict[str, Any], now: int) -> None:
        raise NotImplementedError

    # -- runs -------------------------------------------------------------------------------
    def create_run(self, run: NewRun, opening: RunOpening | None = None) -> RunRecord:
        """Insert a run; idempotent on ``run.id``. ``opening``: what starts with it, atomically."""
        for field, value in (("run id", run.id), ("owner", run.owner), ("tenant", run.tenant),
                             ("agent", run.agent)):
            check_identity(field, value)
        with self._lock:
            if run.id in self._runs:
                if opening is not None:  # idempotent, as in SQL: a retried start repairs a half-done one
                    self._open(run, opening, self.clock())
                return self._runs[run.id]
            if run.thread_id not in self._threads:
                raise NotFoundError(f"no thread {run.thread_id!r} for run {run.id!r}")
            now = self.clock()
            record = RunRecord(
                run.id,
                run.thread_id,
                run.agent,
                run.owner,
                run.status,
                load(dump(run.input)),
                None,
                None,
                None,
                0,
                0,
                0,
                now,
                now,
                run.tenant,
            )
            self._runs[run.id] = record
            if opening is not None:
                self._open(run, opening, now)
            return record

    def _open(self, run: NewRun, opening: RunOpening, now: int) -> None:
        """``opening`` under the store lock, with the run (the message and the thread's status, the
        outbox rows, the queue row)."""
        if opening.message is not None:
            self._append(run.thread_id, [opening.message], now)
        if opening.thread_status is not None:
            self._patch_thread(run.thread_id, {"status": opening.thread_status}, now)
        for entry in opening.outbox:
            self._outbox.setdefault((entry.run_id, entry.step), replace(entry, created_at=now))
        if opening.enqueue:
            self.enqueue_run(run.thread_id, run.id)

    def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None."""
        with self._lock:
            return self._runs.get(run_id)

    def _patch_run(self, run_id: str, fields: dict[str, Any], now: int) -> None:
        sets, adds = split_patch(fields, RUN_SET, RUN_ADD, "run")
        run = self._runs.get(run_id)
        if run is None:
            raise NotFoundError(f"no run {run_id!r}")
        changes: dict[str, Any] = {k: load(dump(v)) for k, v in sets.items()}
        for column, amount in adds.items():
            changes[column] = getattr(run, column) + amount
        self._runs[run_id] = replace(run, **changes, updated_at=now)

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Update run fields; ``add_*`` keys increment."""
        with self._lock:
            self._patch_run(run_id, fields, self.clock())

    def list_runs(
        self, *, thread_id: str | None = None, status: str | None = None, limit: int | None = None
    ) -> list[RunRecord]:
        """Runs filtered by thread and/or status, oldest first; at most ``limit`` when given."""
        with self._lock:
            found = [
                r
                for r in self._runs.values()
                if (thread_id is None or r.thread_id == thread_id) and (status is None or r.status == status)
            ]
        found.sort(key=lambda r: (r.created_at, r.id))
        return found if limit is None else found[: max(limit, 0)]

    # -- the step ledger --------------------------------------------------------------------
    def claim_step(
        self, run_id: str, name: str, *, owner: str, lease_ms: int, max_attempts: int = 5
    ) -> StepClaim:
        """Claim a step: insert it, or take over an expired lease (``attempt += 1``, new generation)."""
        check_identity("step name", name)
        check_identity("lease owner", owner)
        with self._lock:
            if run_id not in self._runs:
                raise NotFoundError(f"no run {run_id!r}; create the run before claiming its steps")
            now = self.clock()
            step = self._steps.get((run_id, name))
            if step is None:
                step = StepRecord(run_id, name, "running", None, None, 1, 1, owner, now + lease_ms, now, now)
                self._steps[(run_id, name)] = step
                return StepClaim("claimed", step)
            outcome = explain(step, now, max_attempts)
            if outcome is not None:
                return StepClaim(outcome, step)
            step = replace(
                step,
                attempt=step.attempt + 1,
                generation=step.generation + 1,
                lease_owner=owner,
                lease_expires_at=now + lease_ms,
                updated_at=now,
            )
            self._steps[(run_id, name)] = step
            return StepClaim("claimed", step)

    def _fenced(self, run_id: str, name: str, generation: int) -> StepRecord | None:
        step = self._steps.get((run_id, name))
        if step is None or step.generation != generation or step.status != "running":
            return None
        return step

    def complete_step(self, run_id: str, name: str, generation: int, completion: StepCompletion) -> bool:
        """Record the result with its messages/usage/patches atomically; False when fenced out."""
        split_patch(
            completion.thread_patch or {}, THREAD_SET, THREAD_ADD, "thread"
        )  # validate before writing
        split_patch(completion.run_patch or {}, RUN_SET, RUN_ADD, "run")
        with self._lock:
            step = self._fenced(run_id, name, generation)
            if step is None or self._runs[run_id].status == "cancelled":
                return False  # fenced out, or the run was cancelled: apply nothing
            now = self.clock()
            run = self._runs[run_id]
            if completion.messages:
                self._append(run.thread_id, completion.messages, now)
            if completion.thread_patch:
                self._patch_thread(run.thread_id, completion.thread_patch, now)
            if completion.usage is not None:
                self._record(completion.usage, now, run.thread_id)
            if completion.run_patch:
                self._patch_run(run_id, completion.run_patch, now)
            self._steps[(run_id, name)] = replace(
                step, status="completed", result=load(dump(completion.result)), error=None, updated_at=now
            )
            return True

    def fail_step(
        self, run_id: str, name: str, generation: int, error: str, *, terminal: bool = False,
        retry_at: int = 0,
    ) -> bool:
        """Record an error. Not terminal: release the lease so a retry can claim at ``retry_at``
        (epoch ms; 0: at once). Fenced like complete."""
        with self._lock:
            step = self._fenced(run_id, name, generation)
            if step is None:
                return False
            status = "failed" if terminal else step.status
            self._steps[(run_id, name)] = replace(
                step, status=status, error=error, lease_expires_at=0 if terminal else retry_at,
                updated_at=self.clock(),
            )
            return True

    def renew_lease(self, run_id: str, name: str, generation: int, lease_ms: int) -> bool:
        """Extend a running step's lease to now + ``lease_ms``; False when fenced out."""
        with self._lock:
            step = self._fenced(run_id, name, generation)
            if step is None:
                return False
            self._steps[(run_id, name)] = replace(step, lease_expires_at=self.clock() + lease_ms)
            return True

    def reclaim_step(
        self, run_id: str, name: str, generation: int, *, owner: str, lease_ms: int, max_attempts: int = 5
    ) -> StepClaim:
        """Take over ``owner``'s own lease of ``generation`` at once; else a plain ``claim_step``."""
        with self._lock:
            step = self._fenced(run_id, name, generation)
            if step is not None and step.lease_owner == owner and step.attempt < max_attempts:
                now = self.clock()
                step = replace(step, attempt=step.attempt + 1, generation=step.generation + 1,
                               lease_expires_at=now + lease_ms, updated_at=now)
                self._steps[(run_id, name)] = step
                return StepClaim("claimed", step)
        return self.claim_step(run_id, name, owner=owner, lease_ms=lease_ms, max_attempts=max_attempts)

    def get_step(self, run_id: str, name: str) -> StepRecord | None:
        """The ledger row, or None."""
        with self._lock:
            return self._steps.get((run_id, name))

    def list_steps(self, run_id: str) -> list[StepRecord]:
        """Every ledger row of the run, in creation order."""
        with self._lock:
            found = [s for (r, _), s in self._steps.items() if r == run_id]
        return sorted(found, key=lambda s: (s.created_at, s.name))

    # -- usage ------------------------------------------------------------------------------
    def _record(self, entry: UsageEntry, now: int, thread_id: str | None = None) -> None:
        for name, value in (("actor", entry.actor), ("tenant", entry.tenant), ("agent", entry.agent),
                            ("model", entry.model)):
            check_identity(name, value)
        created = entry.created_at if entry.created_at is not None else now
        entry = self._costed(replace(entry, created_at=created, thread_id=entry.thread_id or thread_id), now)
        self._usage.append(entry)

    def record_usage(self, entry: UsageEntry) -> None:
        """Append to the token-usage ledger."""
        with self._lock:
            self._record(entry, self.clock())

    def quota_today(self, actor: str) -> int:
        """Input + output tokens of ``actor`` over the current UTC day."""
        start, end = utc_day(self.clock())
        return self.usage_between(actor, start, end).total

    def usage_between(self, actor: str, start_ms: int, end_ms: int) -> UsageTotals:
        """Sums over ``start_ms <= created_at < end_ms``."""
        check_identity("actor", actor)
        with self._lock:
            rows = [u for u in self._usage if u.actor == actor and start_ms <= (u.created_at or 0) < end_ms]
        return UsageTotals(
            sum(u.input_tokens for u in rows),
            sum(u.output_tokens for u in rows),
            sum(u.cache_read_tokens for u in rows),
            sum(u.cache_write_tokens for u in rows),
        )

    def reopen_run(self, run_id: str, *, input: Any, step_names: Sequence[str]) -> bool:
        """A failed run back to ``running`` and ``step_names`` given fresh attempts, at once."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status != "failed":
                return False
            now = self.clock()
            self._runs[run_id] = replace(run, status="running", error=None, stopped=None, result=None,
                                         input=load(dump(input)), updated_at=now)
            thread = self._threads.get(run.thread_id)
            if thread is not None:
                self._threads[thread.id] = replace(thread, status="running", updated_at=now)
            for name in step_names:
                step = self._steps.get((run_id, name))
                if step is not None:
                    self._steps[(run_id, name)] = replace(
                        step, status="running", attempt=0, generation=step.generation + 1,
                        lease_expires_at=0, updated_at=now)
            return True

    def transition_run(self, run_id: str, from_statuses: Collection[str], **fields: Any) -> bool:
        """Apply ``fields`` only while the run's status is one of ``from_statuses``."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status not in from_statuses:
                return False
            self._patch_run(run_id, fields, self.clock())
            return True
