"""The periodic sweep: re-dispatch running runs whose next step nobody is working on.

A lost broker message (a Redis restart, a worker killed before it acked under a misconfigured
broker) delays a run but never loses it: every tick, each running run is re-planned from its ledger
and any step with no live lease is dispatched again. The claim dedupes a dispatch that was not lost
after all. A step whose lease expired ``max_attempts`` times fails the run when the re-dispatched
task claims it (the poison-step rule), so the sweep never loops on a step that kills its worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lunora_jobs.engine.advance import advance_turn, fail_run, now_ms
from lunora_jobs.engine.approval_waits import wake_decided
from lunora_jobs.engine.concurrency import promote_stalled
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.ledger import latest_turn
from lunora_jobs.engine.plan import plan_start
from lunora_jobs.engine.steps import turn_step
from lunora_jobs.engine.turn import TurnResult
from lunora_jobs.store.records import RunRecord


@dataclass
class SweepReport:
    """What one sweep did."""

    scanned: int = 0
    dispatched: list[StepTask] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def sweep(deps: EngineDeps, *, batch: int = 200, grace_ms: int = 30_000) -> SweepReport:
    """Re-dispatch stalled runs: at most ``batch`` running runs, oldest first.

    ``grace_ms``: a run with ledger activity more recent than this is left alone (its next task is
    most likely still in the queue); a live lease is always respected.
    """
    report = SweepReport()
    for run in deps.store.list_runs(status="running")[:batch]:
        report.scanned += 1
        _sweep_run(deps, run, grace_ms, report)
    # Hibernated runs: apply a decision whose resolver died before moving the run on.
    for run in deps.store.list_runs(status="awaiting_input")[:batch]:
        report.scanned += 1
        wake_decided(deps, run, grace_ms)
    # Threads left free with runs queued on them (a crash between a run's end and the promotion).
    for thread_id in deps.store.queued_threads(limit=batch):
        started = promote_stalled(deps, thread_id)
        if started is not None:
            report.dispatched.extend(plan_start(started).dispatch)
    return report


def _sweep_run(deps: EngineDeps, run: RunRecord, grace_ms: int, report: SweepReport) -> None:
    steps = deps.store.list_steps(run.id)
    now = now_ms(deps)
    newest = max([run.updated_at, *(s.updated_at for s in steps)])
    if now - newest < grace_ms:
        return
    agent = deps.agents.get(run.agent)
    if agent is None:
        return  # another app's agent: its own workers sweep it
    latest = latest_turn(steps)
    if latest is None:
        tasks = plan_start(run.id).dispatch
    else:
        number, row = latest
        if row.status == "failed":
            fail_run(deps, run, f"step {row.name!r} failed: {row.error}")
            report.failed.append(run.id)
            return
        if row.status != "completed":
            tasks = () if row.lease_expires_at > now else (StepTask(run.id, turn_step(number), "turn"),)
        else:
            decision = advance_turn(
                deps, run, agent, number, TurnResult.from_json(row.result), steps, mode="recover"
            )
            report.dispatched.extend(decision.dispatch)
            if decision.finish is not None:
                report.finished.append(run.id)
            return
    if tasks:
        deps.dispatcher.dispatch(tasks)
        report.dispatched.extend(tasks)
