"""The user's ``Lunora`` app in a worker or beat process: loaded once from ``LUNORA_APP``, after the fork.

Database connections must never be shared across processes, so each pool process loads the app as it
starts (``worker_process_init``) and drops connections inherited from the parent (an app the parent
loaded also gets the child's own lease-owner identity). The worker also
writes ``LUNORA_WORKER_READY_FILE`` once it consumes, for readiness probes.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from celery import signals

from lunora_jobs.config import Settings
from lunora_jobs.engine.context import default_worker_id

log = logging.getLogger(__name__)

_app: Any = None
_app_lock = threading.Lock()
_on_load: list[Callable[[Any], object]] = []


def on_app_loaded(callback: Callable[[Any], object]) -> None:
    """Call ``callback(app)`` once the process's app is loaded (now, if it already is)."""
    _on_load.append(callback)
    if _app is not None:
        callback(_app)


def get_app() -> Any:
    """The ``Lunora`` app of this process, loaded from ``LUNORA_APP`` on first use."""
    global _app
    if _app is None:
        with _app_lock:
            if _app is None:
                from lunora_jobs.runtime import load_app

                _app = load_app()
                _check_visibility_timeout(_app)
                for callback in _on_load:
                    callback(_app)
    return _app


def _check_visibility_timeout(lunora_app: Any) -> None:
    """Warn when a step may outlive the broker's visibility timeout (Redis would redeliver it mid-run;
    the ledger absorbs the duplicate, but the delivery is wasted and the warning names the fix).
    With the timeout 0 (the default) Redis redelivers nothing, so there is nothing to outlive."""
    limit = Settings().visibility_timeout
    if limit <= 0:
        return
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
    for callback in _on_load:
        callback(lunora_app)


def _dispose_inherited_connections(lunora_app: Any) -> None:
    # A pool created before the fork holds sockets the parent also owns; drop them without closing
    # (closing would break the parent's connections), as SQLAlchemy's pooling guide prescribes.
    engine = getattr(getattr(lunora_app, "store", None), "engine", None)
    dispose = getattr(engine, "dispose", None)
    if callable(dispose):
        dispose(close=False)


def _own_identity(lunora_app: Any) -> None:
    # The lease owner (``host:pid:random``) names the process holding a step: an app inherited from
    # the main process (loaded there by the preflight) would make every pool process claim under
    # the main process's pid, and a killed pool process's leases could not be told from its siblings'.
    deps = getattr(lunora_app, "deps", None)
    if deps is not None and hasattr(deps, "worker_id"):
        deps.worker_id = default_worker_id()


def _load_app_in_child(**_: Any) -> None:
    """Load the user's app in each pool process as it starts, so the first step does not pay for it."""
    if _app is not None:
        _dispose_inherited_connections(_app)
        _own_identity(_app)
        _declare_agents(_app)
        return
    if not Settings().app:
        log.warning("lunora: LUNORA_APP is not set; lunora.* tasks fail until it names your app "
                    "(e.g. LUNORA_APP=myproject.agents:app)")
        return
    try:
        lunora_app = get_app()
    except Exception:  # a broken LUNORA_APP is reported on every task too; keep the process alive
        log.exception("lunora: could not load LUNORA_APP in the worker process")
        return
    _declare_agents(lunora_app)


def _declare_agents(lunora_app: Any) -> None:
    """Record that this worker serves the app's agents (a run of an agent nobody declares fails
    with ``UnknownAgentError`` after ``LUNORA_UNKNOWN_AGENT_S``). Best-effort: a database still
    starting must not stop the worker, and the app's sweep declares them again."""
    declare = getattr(lunora_app, "declare_agents", None)
    if not callable(declare):
        return
    try:
        declare()
    except Exception as exc:
        log.warning("lunora: could not declare this worker's agents yet (%s); its sweep retries", exc)


signals.worker_process_init.connect(_load_app_in_child, weak=False)


def _ready_file() -> Path | None:
    return Settings().worker_ready_file


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
