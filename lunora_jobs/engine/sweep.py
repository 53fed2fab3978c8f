"""The periodic sweep: re-dispatch running runs whose next step nobody is working on.

A lost broker message (a Redis restart) or a dead worker delays a run but never loses it. A pass
finds what is stalled with a few indexed queries (``store.lapsed_steps``, ``quiet_runs``,
``parked_runs_to_wake``: one query per keyset page of ``batch``, whatever the number of runs), then
reads the ledger of each stalled run only, re-plans it and dispatches any step with no live lease:

1. a lapsed lease: the worker holding the step died (a live one renews it, ``engine/leases.py``) —
   taken over at once, so a SIGKILLed worker's steps move again within one lease plus one tick
   (in a run parked on an approval too: the other calls of its turn run meanwhile);
2. a running run quiet for ``grace_ms``: its next message may be lost — re-planned, then touched
   so it is looked at again only one grace period later (a tick never starves: stalest first);
3. a parked run with a decision recorded but not applied, or with nothing left to wait on, or
   waiting on a child run (``agent_as_tool``) that ended without waking it. Hibernated runs
   waiting on an approval are never read; one waiting on a child costs a read of the child's status.

A stalled run (1, 2) past the deadline its ``run_timeout_s`` set fails with ``RunTimeoutError``
instead (read from the run row in hand: no query). A parked run is read only when a step of it
lapsed; otherwise its deadline is checked when its decision wakes it.

Before those, the start outbox's leftovers are sent (``engine/outbox.py``: a broker that was down
when ``run()`` committed); after them, a few times per ``LUNORA_UNKNOWN_AGENT_S``, runs that no live
worker's app declares fail with ``UnknownAgentError`` (``engine/registry.py``).

The claim dedupes a dispatch that was not lost after all. A step whose lease expired
``max_attempts`` times fails the run when the re-dispatched task claims it (the poison-step rule),
so the sweep never loops on a step that kills its worker. A pass examines at most ``budget`` runs.

One pass holds the lock ``sweep_lock_id`` (``SWEEP_LOCK_ID`` per database; ``deps.lock``: the
Redis lock in production) with ``wait_s=0``: a tick that overlaps a pass still running (two beats,
a slow pass) skips instead of scanning the same runs again (``SweepReport.skipped``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.approvals import wake_decided
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.handover import promote_stalled
from lunora_jobs.engine.locks import SWEEP_LOCK_ID, contended
from lunora_jobs.engine.memo import TurnResult, latest_turn
from lunora_jobs.engine.outbox import drain_outbox
from lunora_jobs.engine.pipeline import replan
from lunora_jobs.engine.pipeline.dispatch import fail_run
from lunora_jobs.engine.plan import plan_start
from lunora_jobs.engine.registry import registry_pass
from lunora_jobs.engine.runinfo import recorded_deadline, timeout_error
from lunora_jobs.engine.steps import turn_step
from lunora_jobs.memory.rows import rows_for
from lunora_jobs.store.records import RunRecord, StepRecord

T = TypeVar("T")
K = TypeVar("K")

MEMORY_WRITES = ("memory:episode", "memory:extract")
"""The post-run memory steps the sweep takes over when their lease expired."""
SWEEP_LOCK_MIN_TTL_MS = 5_000
"""The life of the sweep lock (see ``sweep``): longer than a normal pass, shorter than a lease's
recovery bound."""


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
    deps: EngineDeps, *, batch: int = 200, grace_ms: int = 30_000, lock_ttl_ms: int | None = None,
    budget: int = 2_000,
) -> SweepReport:
    """Re-dispatch stalled runs, stalest first: at most ``budget`` runs examined per pass, read in
    keyset pages of ``batch``.

    ``grace_ms``: a run with ledger activity more recent than this is left alone (its next task is
    most likely still in the queue); a live lease is always respected. ``lock_ttl_ms``: how long the
    sweep lock outlives a holder that died mid-pass (default: ``SWEEP_LOCK_MIN_TTL_MS``, whatever
    ``grace_ms``: a dead worker's lapsed leases must not wait for a dead sweeper's lock).
    """
    # A sweeper SIGKILLed mid-pass keeps the lock until it expires, and every tick skips meanwhile:
    # the recovery path itself stalls. A lapsed lease is taken over at once (no grace), so the lock
    # lives a few seconds whatever the grace (the chaos run saw a 30 s lock, the default grace, held
    # as a worker died); a pass outliving it only overlaps the next one, which the ledger dedupes.
    ttl_ms = lock_ttl_ms if lock_ttl_ms is not None else SWEEP_LOCK_MIN_TTL_MS
    key = sweep_lock_id(deps)
    with deps.lock.hold(key, ttl_ms=ttl_ms, wait_s=0) as held:
        if not held and contended(deps.lock, key):
            return SweepReport(skipped=True)
        return _sweep_pass(deps, batch, grace_ms, budget)


def sweep_lock_id(deps: EngineDeps) -> str:
    """``SWEEP_LOCK_ID`` scoped to the database swept: apps on other databases that share the Redis
    (and its key prefix) never skip each other's sweeps."""
    engine = getattr(deps.store, "engine", None)
    url = getattr(engine, "url", None)
    where = url.render_as_string(hide_password=True) if url is not None else f"store-{id(deps.store)}"
    return f"{SWEEP_LOCK_ID}:{hashlib.sha1(where.encode()).hexdigest()[:16]}"


def _paged(fetch: Callable[[K | None], list[T]], key: Callable[[T], K], batch: int) -> Iterator[T]:
    """Every row ``fetch`` finds, one keyset page of ``batch`` at a time (``fetch(after)``)."""
    after: K | None = None
    while True:
        page = fetch(after)
        yield from page
        if len(page) < batch:
            return
        after = key(page[-1])


def _sweep_pass(deps: EngineDeps, batch: int, grace_ms: int, budget: int) -> SweepReport:
    report = SweepReport()
    store, now = deps.store, deps.now()
    agents = sorted(deps.agents)  # another app's runs are its own workers' to sweep
    quiet_before = now - grace_ms
    seen: set[str] = set()

    def first_look(run_id: str) -> bool:
        if run_id in seen or report.scanned >= budget:
            return False
        seen.add(run_id)
        report.scanned += 1
        return True

    # 0. Starts whose first dispatch the broker did not take (it was down): their outbox rows.
    report.dispatched.extend(drain_outbox(deps, agents, batch))
    # 1. A dead worker's steps: a lapsed lease means its holder stopped renewing it. Stalled now.
    lapsed = _paged(lambda after: store.lapsed_steps(now, agents=agents, limit=batch, after=after),
                    lambda row: (row.lease_expires_at, row.run_id, row.name), batch)
    for row in lapsed:
        if report.scanned >= budget:
            break
        if first_look(row.run_id):
            run = store.get_run(row.run_id)
            # A parked run too: the other tool calls of its turn run while it waits for an approval.
            if run is not None and run.status in ("running", "awaiting_input"):
                _sweep_run(deps, run, grace_ms, report)
    # 2. Running runs quiet for a grace period (a lost message). Each one examined is touched, so
    #    it is looked at again one grace period later and the stalest others come first meanwhile.
    quiet = _paged(lambda after: store.quiet_runs("running", quiet_before, agents=agents, limit=batch,
                                                  after=after),
                   lambda run: (run.updated_at, run.id), batch)
    for run in quiet:
        if report.scanned >= budget:
            break
        if first_look(run.id):
            _sweep_run(deps, run, grace_ms, report)
            store.transition_run(run.id, ("running",))
    # 3. Parked runs with a decision whose resolver died before applying it, or nothing left to wait
    #    on. A run waiting on a pending approval is not even read.
    parked = _paged(lambda after: store.parked_runs_to_wake(quiet_before, agents=agents, limit=batch,
                                                            after=after),
                    lambda run: (run.updated_at, run.id), batch)
    for run in parked:
        if report.scanned >= budget:
            break
        if first_look(run.id) and not wake_decided(deps, run, grace_ms):
            store.transition_run(run.id, ("awaiting_input",))
    # 4. Post-run memory writes whose worker died (their run is over, so no scan above finds them).
    stalled = rows_for(store).stalled_writes(MEMORY_WRITES, now, batch)
    if stalled:
        tasks = [StepTask(run_id, step, "memory") for run_id, step in stalled]
        deps.dispatcher.dispatch(tasks)
        report.dispatched.extend(tasks)
    # 5. Threads left free with runs queued on them (a crash between a run's end and the promotion).
    for thread_id in store.queued_threads(limit=batch):
        started = promote_stalled(deps, thread_id)
        if started is not None:
            report.dispatched.extend(plan_start(started).dispatch)
    # 6. Runs whose agent no live worker of any app declares, unclaimed past the bound: failed
    #    (UnknownAgentError) instead of hanging. Due a few times per bound, not every tick.
    report.failed.extend(registry_pass(deps, batch))
    return report


def _sweep_run(deps: EngineDeps, run: RunRecord, grace_ms: int, report: SweepReport) -> None:
    now = deps.now()
    deadline = recorded_deadline(run)
    if deadline is not None and now > deadline and run.agent in deps.agents:
        fail_run(deps, run, timeout_error(run, now - deadline, "found by the sweep"))
        report.failed.append(run.id)
        return
    steps = deps.store.list_steps(run.id)
    newest = max([run.updated_at, *(s.updated_at for s in steps)])
    if now - newest < grace_ms and not _lapsed(steps, now):
        return
    agent = deps.agents.get(run.agent)
    if agent is None:
        return  # another app's agent: its own workers sweep it
    redispatch(deps, run, agent, steps, report)


def redispatch(deps: EngineDeps, run: RunRecord, agent: AgentDefinition, steps: list[StepRecord],
               report: SweepReport) -> None:
    """Dispatch what ``run`` needs next from its ledger ``steps``: its first step, its latest turn
    (unless a live lease holds it), or what follows that turn (a failed turn fails the run)."""
    now = deps.now()
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


def _lapsed(steps: list[StepRecord], now: int) -> bool:
    """A step is running under a lease that lapsed: its worker died (a live one renews it, see
    ``engine/leases.py``), so the run is stalled now, whatever its recent activity. (A lease of 0
    was released by a failed attempt whose retry is queued: the grace applies to it.)"""
    return any(s.status == "running" and 0 < s.lease_expires_at <= now for s in steps)
