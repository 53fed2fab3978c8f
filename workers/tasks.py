"""The Celery tasks: thin wrappers that hand ``(run_id, step)`` to the user's ``Lunora`` app.

A message carries only the run id and the step name; the step ledger in the database decides what
to do with it (run it, replay its memo, or ignore a duplicate), so a redelivered, duplicated or
late message is harmless. Each worker process loads the app named by ``LUNORA_APP`` once, after the
fork (database connections must never be shared across processes).

Tasks (all routed to ``LUNORA_QUEUE``):

- ``lunora.turn`` / ``lunora.tool`` / ``lunora.step``: ``app.execute_step(run_id, step)`` — one LLM
  turn, one tool call, or any other step kind (memory reads, resumes).
- ``lunora.sweep``: ``app.sweep()`` — re-dispatch runs whose next step has no live lease.
- ``lunora.dispatch_due``: ``app.dispatch_due()`` — start delayed runs that came due (a no-op when
  the loaded app has no delayed-run support).
- ``lunora.start_run``: start a run of a named agent (what beat's cron entries send).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

import redis.exceptions
import sqlalchemy.exc
from celery import signals

from workers.celery_app import app as celery
from workers.preflight import preflight_step

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

_app: Any = None
_app_lock = threading.Lock()


def get_app() -> Any:
    """The ``Lunora`` app of this process, loaded from ``LUNORA_APP`` on first use."""
    global _app
    if _app is None:
        with _app_lock:
            if _app is None:
                from lunora_jobs.runtime import load_app

                _app = load_app()
                _check_visibility_timeout(_app)
    return _app


def _check_visibility_timeout(lunora_app: Any) -> None:
    """Warn when a step may outlive the broker's visibility timeout (Redis would redeliver it mid-run;
    the ledger absorbs the duplicate, but the delivery is wasted and the warning names the fix)."""
    from workers.celery_app import visibility_timeout_s

    limit = visibility_timeout_s()
    for agent in getattr(lunora_app, "registry", {}).values():
        timeout = float(getattr(agent, "step_timeout_s", 0))
        if timeout >= limit:
            log.warning(
                "lunora: agent %r has step_timeout_s=%s >= the broker visibility timeout (%ss); set "
                "LUNORA_VISIBILITY_TIMEOUT above the longest step", agent.name, timeout, limit,
            )


def set_app(lunora_app: Any) -> None:
    """Use ``lunora_app`` in this process instead of loading ``LUNORA_APP`` (embedding, benchmarks)."""
    global _app
    _app = lunora_app


def _dispose_inherited_connections(lunora_app: Any) -> None:
    # A pool created before the fork holds sockets the parent also owns; drop them without closing
    # (closing would break the parent's connections), as SQLAlchemy's pooling guide prescribes.
    engine = getattr(getattr(lunora_app, "store", None), "engine", None)
    dispose = getattr(engine, "dispose", None)
    if callable(dispose):
        dispose(close=False)


def _load_app_in_child(**_: Any) -> None:
    """Load the user's app in each pool process as it starts, so the first step does not pay for it."""
    if _app is not None:
        _dispose_inherited_connections(_app)
        return
    if not os.environ.get("LUNORA_APP"):
        log.warning("lunora: LUNORA_APP is not set; lunora.* tasks fail until it names your app "
                    "(e.g. LUNORA_APP=myproject.agents:app)")
        return
    try:
        get_app()
    except Exception:  # a broken LUNORA_APP is reported on every task too; keep the process alive
        log.exception("lunora: could not load LUNORA_APP in the worker process")


signals.worker_process_init.connect(_load_app_in_child, weak=False)


def _ready_file() -> Path | None:
    path = os.environ.get("LUNORA_WORKER_READY_FILE")
    return Path(path) if path else None


def _mark_ready(**_: Any) -> None:
    """Write ``LUNORA_WORKER_READY_FILE`` once the worker consumes (a readiness probe can watch it)."""
    path = _ready_file()
    if path is not None:
        path.write_text(str(os.getpid()))


def _mark_not_ready(**_: Any) -> None:
    path = _ready_file()
    if path is not None:
        path.unlink(missing_ok=True)


signals.worker_ready.connect(_mark_ready, weak=False)
signals.worker_shutting_down.connect(_mark_not_ready, weak=False)


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
    if grace_ms is None and os.environ.get("LUNORA_SWEEP_GRACE_MS"):
        grace_ms = int(os.environ["LUNORA_SWEEP_GRACE_MS"])
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


def _dispatch_due() -> Any:
    """Start the delayed runs (``run_after`` / ``run_at``) that came due."""
    due = getattr(get_app(), "dispatch_due", None)
    return due() if callable(due) else None


def _start_run(agent: str, input: Any = None, thread_key: str | None = None, owner: str | None = None) -> str:
    """Start a run of agent ``agent`` (beat's cron entries). Returns the run id."""
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
start_run = celery.task(_start_run, name="lunora.start_run", **_RETRY)

# Refuse to consume when this worker would silently run a demo default (workers.preflight).
celery.steps["worker"].add(preflight_step(get_app))
