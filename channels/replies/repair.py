"""``sweep_replies``: the repair pass for replies whose dispatch or delivery was lost.

A reply is pending from the delivery's claim until its step is recorded. If the process that ended
the run died before dispatching the reply, or a worker died mid-delivery (its lease then expires),
this pass dispatches the step again; the step's ledger claim makes that safe to repeat, from any
number of processes. ``lunora ingress`` runs it every few seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from channels.ledger import ledger_for
from channels.replies.kind import reply_step
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask

DEFAULT_GRACE_MS = 2_000
"""A run that ended less than this ago is left to its own end-of-run dispatch."""


@dataclass
class ReplySweep:
    """What one pass did: steps dispatched again, replies found recorded (or given up) and closed."""

    dispatched: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)


def sweep_replies(deps: EngineDeps, *, grace_ms: int = DEFAULT_GRACE_MS, limit: int = 200) -> ReplySweep:
    """Re-dispatch pending replies of ended runs whose step is not running under a live lease."""
    ledger = ledger_for(deps.store)
    now = deps.now()
    report = ReplySweep()
    tasks = []
    for pending in ledger.pending_replies(now - grace_ms, limit):
        step = reply_step(str(pending.reply.get("channel")))
        row = deps.store.get_step(pending.run_id, step)
        agent = deps.agents.get(pending.agent)
        spent = row is not None and agent is not None and row.attempt >= agent.max_attempts
        recorded = row is not None and row.status in ("completed", "failed")
        if recorded or (spent and row is not None and row.lease_expires_at <= now):
            ledger.reply_done(pending.run_id, now)
            report.closed.append(pending.run_id)
        elif row is None or row.lease_expires_at <= now:
            tasks.append(StepTask(pending.run_id, step, "step"))
            report.dispatched.append(pending.run_id)
    if tasks:
        deps.dispatcher.dispatch(tasks)
    return report
