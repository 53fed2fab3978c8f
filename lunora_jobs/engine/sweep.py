"""The periodic sweep: re-dispatch running runs whose next step nobody is working on.

A lost broker message (a Redis restart, a worker killed before it acked under a misconfigured
broker) delays a run but never loses it: every tick, each running run is re-planned from its ledger
and any step with no live lease is dispatched again. The claim dedupes a dispatch that was not lost
after all. A step whose lease expired ``max_attempts`` times fails the run when the re-dispatched
task claims it (the poison-step rule), so the sweep never loops on a step that kills its worker.

One pass holds the lock ``sweep_lock_id`` (``SWEEP_LOCK_ID`` per database; ``deps.lock``: the
Redis lock in production) with ``wait_s=0``: a tick that overlaps a pass still running (two beats,
a slow pass) skips instead of scanning the same runs again (``SweepReport.skipped``). Each scan is
one bounded query per status (``list_runs(status=..., limit=batch)``, oldest first), never every
running run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from lunora_jobs.engine.approvals import wake_decided
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.handover import promote_stalled
from lunora_jobs.engine.locks import SWEEP_LOCK_ID, contended
from lunora_jobs.engine.memo import TurnResult, latest_turn
from lunora_jobs.engine.pipeline import replan
from lunora_jobs.engine.pipeline.dispatch import fail_run
from lunora_jobs.engine.plan import plan_start
from lunora_jobs.engine.steps import turn_step
from lunora_jobs.memory.rows import rows_for
from lunora_jobs.store.records import RunRecord

MEMORY_WRITES = ("memory:episode", "memory:extract")
"""The post-run memory steps the sweep takes over when their lease expired."""
SWEEP_LOCK_MIN_TTL_MS = 5_000
"""The shortest life of the sweep lock (see ``sweep``): longer than any normal pass."""


@dataclass
class SweepReport:
    """What one sweep did."""

    scanned: int = 0
    dispatched: list[StepTask] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: bool = False
    """True when another sweep pass held the sweep lock: this one scanned nothing."""


def sweep(
    deps: EngineDeps, *, batch: int = 200, grace_ms: int = 30_000, lock_ttl_ms: int | None = None
) -> SweepReport:
    """Re-dispatch stalled runs: at most ``batch`` running runs, oldest first.

    ``grace_ms``: a run with ledger activity more recent than this is left alone (its next task is
    most likely still in the queue); a live lease is always respected. ``lock_ttl_ms``: how long the
    sweep lock outlives a holder that died mid-pass (default: ``grace_ms``, at least
    ``SWEEP_LOCK_MIN_TTL_MS``).
    """
    # A sweeper SIGKILLed mid-pass keeps the lock until it expires, and every tick skips meanwhile:
    # the recovery path itself stalls. So the lock lives about one grace period (a run is not
    # sweepable sooner anyway); a pass outliving it only overlaps the next one, which the ledger dedupes.
    ttl_ms = lock_ttl_ms if lock_ttl_ms is not None else max(grace_ms, SWEEP_LOCK_MIN_TTL_MS)
    key = sweep_lock_id(deps)
    with deps.lock.hold(key, ttl_ms=ttl_ms, wait_s=0) as held:
        if not held and contended(deps.lock, key):
            return SweepReport(skipped=True)
        return _sweep_pass(deps, batch, grace_ms)


def sweep_lock_id(deps: EngineDeps) -> str:
    """``SWEEP_LOCK_ID`` scoped to the database swept: apps on other databases that share the Redis
    (and its key prefix) never skip each other's sweeps."""
    engine = getattr(deps.store, "engine", None)
    url = getattr(engine, "url", None)
    where = url.render_as_string(hide_password=True) if url is not None else f"store-{id(deps.store)}"
    return f"{SWEEP_LOCK_ID}:{hashlib.sha1(where.encode()).hexdigest()[:16]}"


def _sweep_pass(deps: EngineDeps, batch: int, grace_ms: int) -> SweepReport:
    report = SweepReport()
    for run in deps.store.list_runs(status="running", limit=batch):
        report.scanned += 1
        _sweep_run(deps, run, grace_ms, report)
    # Hibernated runs: apply a decision whose resolver died before moving the run on.
    for run in deps.store.list_runs(status="awaiting_input", limit=batch):
        report.scanned += 1
        wake_decided(deps, run, grace_ms)
    # Post-run memory writes whose worker died (their run is over, so no scan above finds them).
    stalled = rows_for(deps.store).stalled_writes(MEMORY_WRITES, deps.now(), batch)
    if stalled:
        tasks = [StepTask(run_id, step, "memory") for run_id, step in stalled]
        deps.dispatcher.dispatch(tasks)
        report.dispatched.extend(tasks)
    # Threads left free with runs queued on them (a crash between a run's end and the promotion).
    for thread_id in deps.store.queued_threads(limit=batch):
        started = promote_stalled(deps, thread_id)
        if started is not None:
            report.dispatched.extend(plan_start(started).dispatch)
    return report


def _sweep_run(deps: EngineDeps, run: RunRecord, grace_ms: int, report: SweepReport) -> None:
    steps = deps.store.list_steps(run.id)
    now = deps.now()
    newest = max([run.updated_at, *(s.updated_at for s in steps)])
    if now - newest < grace_ms:
        return
    agent = deps.agents.get(run.agent)
    if agent is None:
        return  # another app's agent: its own workers sweep it
    latest = latest_turn(steps)
    if latest is None:
        tasks = plan_start(run.id, agent.memory_reads).dispatch
    else:
        number, row = latest
        if row.status == "failed":
            fail_run(deps, run, f"step {row.name!r} failed: {row.error}")
            report.failed.append(run.id)
            return
        if row.status != "completed":
            tasks = () if row.lease_expires_at > now else (StepTask(run.id, turn_step(number), "turn"),)
        else:
            decision = replan(deps, run, agent, number, TurnResult.from_json(row.result), steps, "recover")
            report.dispatched.extend(decision.dispatch)
            if decision.finish is not None:
                report.finished.append(run.id)
            return
    if tasks:
        deps.dispatcher.dispatch(tasks)
        report.dispatched.extend(tasks)
