"""Firing due schedules: claim (a database claim under a lease), start the run, record the fire.

Exactly once: the claim gives each due row to one claimer at a time, and the run a fire starts has an
id derived from the occurrence (``occurrence_run_id``). A claimer killed between starting the run and
recording the fire loses its lease; whoever takes the row over starts "the same" run again, which
``start_run`` turns into a replay that starts nothing. So two beats, a beat restart or a killed
worker never start an occurrence twice.

A fire whose start fails for a reason a retry cannot fix (no such agent, a busy thread whose agent
rejects concurrent runs) is recorded as ``failed`` (a cron entry moves on to its next fire, with the
error kept on its row). Anything else (the database went away) leaves the claim to expire: the row
is retried a lease later, up to ``MAX_ATTEMPTS`` claims.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.start import start_run
from lunora_jobs.errors import LunoraError, QuotaUnavailableError
from lunora_jobs.scheduling.cron import CronEntry
from lunora_jobs.store.base import SCHEDULE_LEASE_MS
from lunora_jobs.store.records import ScheduleRecord

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
"""Claims of one occurrence before it is recorded as failed (each claimer died before recording it)."""

_RUN_NAMESPACE = uuid.UUID("5d0f3c59-2f6e-4f55-9a86-5b4d8f0c7a11")


def occurrence_run_id(schedule_id: str, due_at: int) -> str:
    """The id of the run an occurrence starts: the same for every delivery of the same fire."""
    return uuid.uuid5(_RUN_NAMESPACE, f"{schedule_id}@{due_at}").hex


def new_claimer() -> str:
    """A claimer id unique to this process and call (host, pid, random)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class DueReport:
    """What one ``dispatch_due`` did: ``fired`` (schedule id, run id) pairs, ``skipped`` late cron
    fires (``missed="skip"``), ``failed`` schedule ids."""

    fired: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class _Fire:
    agent: str
    input: Any
    thread_key: str | None
    owner: str | None
    title: str | None


def _once_fire(row: ScheduleRecord) -> _Fire:
    params: Mapping[str, Any] = row.payload if isinstance(row.payload, Mapping) else {}
    return _Fire(row.agent, params.get("input"), params.get("thread_key"), params.get("owner"),
                 params.get("title"))


def _cron_fire(entry: CronEntry) -> _Fire:
    return _Fire(entry.agent, entry.input, entry.thread_key, entry.owner, None)


class DueDispatcher:
    """Claims due schedules and fires them; one per app (``app.scheduler`` owns it)."""

    def __init__(self, deps: EngineDeps, crons: Mapping[str, CronEntry]) -> None:
        self._deps = deps
        self._crons = crons

    def run(self, *, limit: int = 100, lease_ms: int = SCHEDULE_LEASE_MS) -> DueReport:
        """Fire everything due now, in batches of up to ``limit`` claims, until a claim finds nothing."""
        report = DueReport()
        claimer = new_claimer()
        while True:
            now = self._deps.now()
            batch = self._deps.store.claim_due_schedules(now, limit, claimer, lease_ms=lease_ms)
            if not batch:
                # Not "fewer than limit": a batch short because another claimer won some rows says
                # nothing about the rows after them. The claimer that won goes on until it sees none.
                return report
            for row in batch:
                self._fire(row, now, report)

    def _fire(self, row: ScheduleRecord, now: int, report: DueReport) -> None:
        assert row.claimed_by is not None and row.claimed_at is not None  # a claimed row
        due_at = row.due_at if row.due_at is not None else row.run_at
        entry = self._crons.get(row.id.removeprefix("cron:")) if row.kind == "cron" else None
        next_due = None if entry is None else entry.next_after(max(now, due_at))

        def finish(status: str, run_id: str | None = None, error: str | None = None) -> bool:
            assert row.claimed_by is not None and row.claimed_at is not None
            return self._deps.store.finish_schedule(
                row.id, claimed_by=row.claimed_by, claimed_at=row.claimed_at, status=status,
                run_id=run_id, next_due=next_due, error=error,
            )

        if row.kind == "cron" and entry is None:
            finish("orphaned", error="the app no longer declares this cron entry")
            return
        if row.attempts > MAX_ATTEMPTS:
            finish("failed", error=f"gave up after {MAX_ATTEMPTS} claims that never recorded a fire")
            report.failed.append(row.id)
            return
        if entry is not None and entry.missed == "skip" and now - due_at > entry.grace_s * 1000:
            finish("pending", error=f"skipped the fire of {_iso(due_at)} (late; missed='skip')")
            report.skipped.append(row.id)
            return
        fire = _once_fire(row) if entry is None else _cron_fire(entry)
        run_id = occurrence_run_id(row.id, due_at)
        try:
            agent = self._deps.agent(fire.agent)
            # A schedule is declared by the app's own code (trusted), so it may continue an owned thread.
            start_run(self._deps, agent, input=fire.input, thread_key=fire.thread_key, owner=fire.owner,
                      title=fire.title, run_id=run_id, as_system=True)
        except QuotaUnavailableError:
            # Fail closed but not for good: the usage could not be read; the claim expires, it is retried.
            log.exception("lunora scheduler: %s (due %s) is retried after its lease", row.id, _iso(due_at))
            return
        except LunoraError as exc:
            log.warning("lunora scheduler: %s (due %s) failed: %s", row.id, _iso(due_at), exc)
            finish("failed", run_id=None, error=f"{type(exc).__name__}: {exc}")
            report.failed.append(row.id)
            return
        except Exception:
            # Transient (a database or broker hiccup): the claim expires and the row is retried.
            log.exception("lunora scheduler: %s (due %s) is retried after its lease", row.id, _iso(due_at))
            return
        finish("fired", run_id=run_id)
        report.fired.append((row.id, run_id))
