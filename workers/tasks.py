"""The Celery tasks: thin wrappers that hand ``(run_id, step)`` to the user's ``Lunora`` app.

A message carries only the run id and the step name; the step ledger in the database decides what
to do with it (run it, replay its memo, or ignore a duplicate), so a redelivered, duplicated or
late message is harmless. Each worker process loads the app named by ``LUNORA_APP`` once, after the
fork (database connections must never be shared across processes).

Tasks (all routed to ``LUNORA_QUEUE``):

- ``lunora.turn`` / ``lunora.tool`` / ``lunora.step``: ``app.execute_step(run_id, step)`` — one LLM
  turn, one tool call, or any other step kind (memory reads, resumes).
- ``lunora.sweep``: ``app.sweep()`` — re-dispatch runs whose next step has no live lease.
- ``lunora.dispatch_due``: ``app.dispatch_due()`` — start the delayed runs and cron fires that came
  due (beat sends it every ``LUNORA_SCHEDULER_TICK`` seconds and at each cron entry's fire time).
- ``lunora.start_run``: start a run of a named agent now (scripts, operators).
- ``lunora.proposals``: ``app.work_proposals()`` — expire overdue action proposals and execute the
  approved ones (sent after an approval; beat's ``lunora.proposals_tick`` is the same work, and also
  recovers the proposal of a worker killed mid-execution).
- ``lunora.retention``: ``app.purge_ledger()`` — delete finished runs' step-ledger rows older than
  ``LUNORA_RETENTION_DAYS`` in bounded batches (beat's ``lunora-retention`` entry, only when set).
"""

from __future__ import annotations

import logging
from typing import Any

import redis.exceptions
import sqlalchemy.exc

from lunora_jobs.config import Settings
from workers.app_loader import get_app, on_app_loaded
from workers.celery_app import app as celery
from workers.preflight import preflight_step
from workers.time_limits import apply_time_limits

log = logging.getLogger(__name__)

# Infrastructure hiccups (a database failover, a Redis restart) are retried with backoff; anything
# else is the engine's business and already recorded in the ledger by ``execute_step``.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    sqlalchemy.exc.OperationalError,
    sqlalchemy.exc.InterfaceError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
)
_RETRY: dict[str, Any] = {
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 1,
    "retry_backoff_max": 30,
    "retry_jitter": True,
    "max_retries": 8,
}

def _turn(run_id: str, step: str) -> None:
    """Run one LLM turn step (``llm:turn:<n>``)."""
    get_app().execute_step(run_id, step)


def _tool(run_id: str, step: str) -> None:
    """Run one tool-call step (``tool:<name>:<call_id>``)."""
    get_app().execute_step(run_id, step)


def _other_step(run_id: str, step: str) -> None:
    """Run a step of any other kind (memory reads and writes, resumes after an approval)."""
    get_app().execute_step(run_id, step)


def _sweep(grace_ms: int | None = None) -> int:
    """Re-dispatch stalled runs (a lost message, a killed worker). Safe to run concurrently.

    ``grace_ms`` (default: env ``LUNORA_SWEEP_GRACE_MS``, else the engine's 30 s): runs with ledger
    activity more recent than this are left alone — their next task is most likely still queued.
    Returns how many steps were re-dispatched.
    """
    if grace_ms is None:
        grace_ms = Settings().sweep_grace_ms
    report = get_app().sweep() if grace_ms is None else get_app().sweep(grace_ms=grace_ms)
    dispatched = getattr(report, "dispatched", None)
    # Silent when it found nothing: beat runs this every few seconds.
    if dispatched:
        log.info("lunora sweep: re-dispatched %s", [t.task_id for t in dispatched])
    for outcome in ("finished", "failed"):
        runs = getattr(report, outcome, None)
        if runs:
            log.info("lunora sweep: %s runs %s", outcome, runs)
    return len(dispatched or ())


def _dispatch_due() -> int:
    """Start the delayed runs (``run_after`` / ``run_at``) and cron fires that came due; returns how
    many started. Safe on two beats at once: each occurrence is claimed in the database."""
    due = getattr(get_app(), "dispatch_due", None)
    report = due() if callable(due) else None
    fired = getattr(report, "fired", None) or []
    # Silent when nothing was due: beat runs this every second.
    if fired:
        log.info("lunora scheduler: started %s", [f"{sid} -> {run_id}" for sid, run_id in fired])
    for outcome in ("skipped", "failed"):
        ids = getattr(report, outcome, None)
        if ids:
            log.warning("lunora scheduler: %s %s", outcome, ids)
    return len(fired)


def _proposals(proposal_id: str | None = None, step: str | None = None) -> int:
    """Expire overdue action proposals and execute the approved ones; returns how many ran.

    The dispatcher's message names the approved proposal (``proposal_id``, ``step``) for the task id
    and Flower only: any queued proposal is claimed, oldest first.
    """
    report = get_app().work_proposals()
    if report.expired or report.executed:
        log.info("lunora proposals: expired %s, executed %s", report.expired,
                 [(e.proposal_id, e.status) for e in report.executed])
    return len(report.executed)


def _retention() -> int:
    """The retention pass (``LUNORA_RETENTION_DAYS``): delete finished runs' old step-ledger rows in
    bounded batches; returns how many rows went. A no-op while retention is off."""
    purge = getattr(get_app(), "purge_ledger", None)
    report = purge() if callable(purge) else None
    deleted = int(getattr(report, "deleted", 0) or 0)
    if deleted:
        more = getattr(report, "more", False)
        log.info("lunora retention: deleted %d ledger rows (more left: %s)", deleted, more)
    return deleted


def _start_run(agent: str, input: Any = None, thread_key: str | None = None, owner: str | None = None) -> str:
    """Start a run of agent ``agent`` now. Returns the run id."""
    client = getattr(get_app().agents, agent)
    handle = client.run(input=input, thread_key=thread_key, owner=owner)
    return str(handle.id)


# Registered by call rather than decorator: the module-level names stay plain, typed functions.
turn = celery.task(_turn, name="lunora.turn", **_RETRY)
tool = celery.task(_tool, name="lunora.tool", **_RETRY)
other_step = celery.task(_other_step, name="lunora.step", **_RETRY)
# Beat's ticks send no task events: every 5 s they would bury the steps in Flower's task list.
sweep = celery.task(_sweep, name="lunora.sweep", send_events=False, **_RETRY)
dispatch_due = celery.task(_dispatch_due, name="lunora.dispatch_due", send_events=False, **_RETRY)
retention = celery.task(_retention, name="lunora.retention", send_events=False, **_RETRY)
start_run = celery.task(_start_run, name="lunora.start_run", **_RETRY)
proposals = celery.task(_proposals, name="lunora.proposals", **_RETRY)
proposals_tick = celery.task(_proposals, name="lunora.proposals_tick", send_events=False, **_RETRY)

# Step time limits from the agents' step_timeout_s, once the app is loaded (workers.time_limits).
on_app_loaded(lambda lunora_app: apply_time_limits(celery, lunora_app))

# Refuse to consume when this worker would silently run a demo default (workers.preflight).
celery.steps["worker"].add(preflight_step(get_app))
