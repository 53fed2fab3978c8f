"""The retention pass: delete finished runs' step-ledger rows older than ``LUNORA_RETENTION_DAYS``.

Off by default. Beat runs it (``lunora.retention``, every ``LUNORA_RETENTION_TICK`` seconds) in batches
of ``LUNORA_RETENTION_BATCH`` rows, at most ``max_batches`` per tick, so one tick never holds a long
transaction or the workers' database for long. Only ``agent_steps`` rows of completed, failed and
cancelled runs go: the runs, their transcript, tool calls and usage rows (billing, quotas) stay, and
open runs (running, awaiting input, queued) are never touched.

Example::

    report = purge_ledger(app.store, days=30, batch=1000, now_ms=clock())
    report.deleted, report.batches
"""

from __future__ import annotations

from dataclasses import dataclass

from lunora_jobs.engine.handover import TERMINAL
from lunora_jobs.store.base import AgentStore

DAY_MS = 86_400_000


@dataclass(frozen=True)
class RetentionReport:
    """What one pass deleted: ``deleted`` rows in ``batches`` batches; ``more``: it stopped at the bound."""

    deleted: int
    batches: int
    more: bool


def purge_ledger(
    store: AgentStore, *, days: float, batch: int, now_ms: int, max_batches: int = 10
) -> RetentionReport:
    """Delete ledger rows of finished runs last updated more than ``days`` ago, ``batch`` rows at a time."""
    if days <= 0 or batch <= 0:
        raise ValueError("retention needs days > 0 and batch > 0")
    before = now_ms - int(days * DAY_MS)
    deleted = batches = 0
    while batches < max_batches:
        gone = store.purge_ledger(before, batch, TERMINAL)
        batches += 1
        deleted += gone
        if gone < batch:
            return RetentionReport(deleted, batches, more=False)
    return RetentionReport(deleted, batches, more=True)
