"""Retrying a failed run: ``retry_failed`` resumes it from the step it failed at.

What a retry does, in order:

1. refuses what it cannot resume: an unknown run (``NotFoundError``), a run that is not ``failed``
   (``RunNotFailedError``), a thread another run took meanwhile (``ConflictError``);
2. takes the thread's active-run slot back (the same conditional write a start makes);
3. in one store transaction (``reopen_run``): the run goes back to ``running`` (its error cleared,
   its recorded deadline moved to now + its recorded ``run_timeout_s``), and the steps that failed —
   a ``failed`` ledger row, or one whose lease lapsed (a worker died on it: the poison-step rule) —
   get fresh attempts under the run's recorded retry policy, and the thread says running again;
4. dispatches what the ledger says is next (the sweep's ``redispatch``).

Completed steps are never touched: they stay memoized, so no turn is paid for again and no tool
runs twice. The retry policy and agent version the run recorded at its start still apply.
"""

from __future__ import annotations

from dataclasses import replace

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.sweep import MEMORY_WRITES, SweepReport, redispatch
from lunora_jobs.errors import ConflictError, NotFoundError, RunNotFailedError
from lunora_jobs.store.records import StepRecord


def retry_failed(deps: EngineDeps, run_id: str) -> list[str]:
    """Resume failed run ``run_id`` from its failed step; returns the names of the steps given fresh
    attempts (empty when the run failed between steps, e.g. on its deadline)."""
    store = deps.store
    run = store.get_run(run_id)
    if run is None:
        raise NotFoundError(f"no run {run_id!r}")
    if run.status != "failed":
        raise RunNotFailedError(
            f"run {run_id!r} is {run.status}, not failed; only a failed run can be retried (start a new "
            "run instead)"
        )
    agent = deps.agent(run.agent)
    info = run_info(run)
    if not store.acquire_thread(run.thread_id, run.id):
        thread = store.get_thread_by_id(run.thread_id)
        holder = thread.active_run_id if thread is not None else None
        raise ConflictError(
            f"thread {info.thread_key!r} has another run in flight ({holder!r}); retry run {run_id!r} "
            "once that run has ended"
        )
    now = deps.now()
    steps = store.list_steps(run.id)
    failed = [s.name for s in steps if _failed(s, now)]
    deadline = None if info.timeout_ms is None else now + info.timeout_ms
    try:
        reopened = store.reopen_run(run.id, input=replace(info, deadline=deadline).to_json(),
                                    step_names=failed)
    except BaseException:
        store.release_thread(run.thread_id, run.id)
        raise
    if not reopened:
        store.release_thread(run.thread_id, run.id)
        raise RunNotFailedError(f"run {run_id!r} changed while it was being retried; read its status again")
    deps.events.publish(info.thread_key, {"type": "status", "status": "running", "run_id": run.id})
    current = store.get_run(run.id) or run
    redispatch(deps, current, agent, store.list_steps(run.id), SweepReport())
    return failed


def _failed(step: StepRecord, now: int) -> bool:
    """A step the run failed on: closed as failed, or left running under a lapsed lease (its worker
    died, or its attempts ran out). Post-run memory writes are not the run's steps."""
    if step.name in MEMORY_WRITES:
        return False
    return step.status == "failed" or (step.status == "running" and step.lease_expires_at <= now)
