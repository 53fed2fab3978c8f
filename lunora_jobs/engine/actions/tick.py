"""Beat's proposal tick: expire what waited too long (and tell its thread), then drain the approved
work.

An expiry is announced exactly once: the tick posts the message (keyed by the proposal: a repeat is
ignored) and only then marks the proposal announced (``settled_at``, fenced on its version), so a tick
that dies in between is finished by the next one. Expiries by a late decision are announced the same
way. Only proposals whose deadline is under ``ANNOUNCE_WINDOW_MS`` old are looked at.

Draining is also the recovery path: ``claim_next`` takes over a lease that ran out (a worker killed
mid-execution) just like queued work, with generation + 1 and the same idempotency key. A tick whose
dispatched task was lost is repaired by the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lunora_jobs.engine.actions.execute import ExecutionReport, execute_next
from lunora_jobs.engine.actions.outcome import report_outcome
from lunora_jobs.engine.actions.propose import proposal_store
from lunora_jobs.engine.context import EngineDeps

ANNOUNCE_WINDOW_MS = 7 * 86_400_000
"""How far back (by deadline) a tick looks for expiries still to announce."""


@dataclass
class TickReport:
    """What one tick did: the proposals it expired, the expiries it announced to their threads and the
    executions it ran, in order."""

    expired: list[str] = field(default_factory=list)
    executed: list[ExecutionReport] = field(default_factory=list)
    announced: list[str] = field(default_factory=list)


def tick(deps: EngineDeps, *, worker_id: str, lease_ms: int, limit: int = 100) -> TickReport:
    """Expire up to ``limit`` overdue pending proposals, then execute up to ``limit`` due ones."""
    store = proposal_store(deps.store)
    report = TickReport(expired=store.expire_action_proposals(limit))
    for proposal in store.unannounced_expired_proposals(deps.now() - ANNOUNCE_WINDOW_MS, limit):
        report_outcome(deps, proposal, "expired")
        if store.mark_expiry_announced(proposal):
            report.announced.append(proposal.id)
    while len(report.executed) < limit:
        done = execute_next(deps, worker_id=worker_id, lease_ms=lease_ms)
        if done is None:
            break
        report.executed.append(done)
    return report
