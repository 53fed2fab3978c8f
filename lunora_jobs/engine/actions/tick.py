"""Beat's proposal tick: expire what waited too long, then drain the approved work.

Draining is also the recovery path: ``claim_next`` takes over a lease that ran out (a worker killed
mid-execution) just like queued work, with generation + 1 and the same idempotency key. A tick whose
dispatched task was lost is repaired by the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lunora_jobs.engine.actions.execute import ExecutionReport, execute_next
from lunora_jobs.engine.actions.propose import proposal_store
from lunora_jobs.engine.context import EngineDeps


@dataclass
class TickReport:
    """What one tick did: the proposals it expired and the executions it ran, in order."""

    expired: list[str] = field(default_factory=list)
    executed: list[ExecutionReport] = field(default_factory=list)


def tick(deps: EngineDeps, *, worker_id: str, lease_ms: int, limit: int = 100) -> TickReport:
    """Expire up to ``limit`` overdue pending proposals, then execute up to ``limit`` due ones."""
    report = TickReport(expired=proposal_store(deps.store).expire_action_proposals(limit))
    while len(report.executed) < limit:
        done = execute_next(deps, worker_id=worker_id, lease_ms=lease_ms)
        if done is None:
            break
        report.executed.append(done)
    return report
