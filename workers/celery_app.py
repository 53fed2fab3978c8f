"""The Celery app of the worker fleet, configured for at-least-once delivery.

``celery -A workers worker`` finds ``app`` through ``workers/__init__.py``; ``lunora worker`` is the
same command (see :func:`main`). Nothing here names a user's agents: the tasks load the user's
``Lunora`` app from ``LUNORA_APP`` (``"myproject.agents:app"``), so one worker image runs any project.

Environment:

- ``CELERY_BROKER_URL``: the broker (default ``redis://127.0.0.1:6379/0``; ``amqp://`` works too).
- ``LUNORA_QUEUE``: the queue every ``lunora.*`` task is routed to and the worker consumes by default
  (default ``lunora``) — tests and benchmarks isolate themselves with a private name.
- ``LUNORA_VISIBILITY_TIMEOUT``: seconds before Redis redelivers an unacknowledged message (default
  3600). It must be longer than the longest step (an agent's ``step_timeout_s``), or a slow step is
  delivered twice; the ledger then dedupes, but the work is wasted.
- ``LUNORA_SWEEP_INTERVAL``: seconds between sweep ticks of beat (default 5, see ``workers.beat``).
- ``LUNORA_STEP_ROUTES``: step kind -> queue and priority (see ``workers.dispatch``).
- ``LUNORA_BEAT_SCHEDULE``, ``LUNORA_HEARTBEAT_FILE``: beat's schedule file and the liveness heartbeat
  (see ``workers.scheduler`` and ``workers.heartbeat``).

Example::

    CELERY_BROKER_URL=redis://localhost:6379/0 LUNORA_APP=myproject.agents:app lunora worker -c 4
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from celery import Celery

import workers.heartbeat  # noqa: F401  (connects the worker heartbeat to the worker's signals)
from lunora_jobs.config import Settings
from workers import quiet_ticks

quiet_ticks.install()

DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/0"
DEFAULT_QUEUE = "lunora"
DEFAULT_VISIBILITY_TIMEOUT_S = 3600
SOFT_SHUTDOWN_TIMEOUT_S = 30.0


def broker_url_from_env() -> str:
    """The broker named by ``CELERY_BROKER_URL``, or the local Redis default."""
    return os.environ.get("CELERY_BROKER_URL") or DEFAULT_BROKER_URL


def queue_name() -> str:
    """The queue ``lunora.*`` tasks go to (env ``LUNORA_QUEUE``, default ``lunora``)."""
    return os.environ.get("LUNORA_QUEUE") or DEFAULT_QUEUE


def visibility_timeout_s() -> int:
    """Seconds before an unacknowledged Redis message is redelivered (env ``LUNORA_VISIBILITY_TIMEOUT``)."""
    raw = os.environ.get("LUNORA_VISIBILITY_TIMEOUT")
    return int(raw) if raw else DEFAULT_VISIBILITY_TIMEOUT_S


def reliability_config(broker_url: str, queue: str, visibility_timeout: int) -> dict[str, Any]:
    """The Celery settings behind "a crashed worker or a lost message never loses a run".

    Returned as a plain dict so the benchmark's raw-Celery baseline runs on exactly the same settings.
    """
    transport_options: dict[str, Any] = {"visibility_timeout": visibility_timeout}
    return {
        "broker_url": broker_url,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": transport_options,
        # Same value on both sides, as Celery's docs ask, in case a user turns a result backend on.
        "result_backend_transport_options": dict(transport_options),
        # Ack after the step ran, and put the message back when the worker process dies under it:
        # the step ledger turns the resulting redelivery into a replay, never a second execution.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        # One message in flight per process: a killed process strands at most one step.
        "worker_prefetch_multiplier": 1,
        # Results live in the database ledger; a result backend would add a round trip per step.
        "task_ignore_result": True,
        "task_store_errors_even_if_ignored": False,
        # A deploy (SIGTERM) first lets running steps finish, then requeues what is left.
        "worker_soft_shutdown_timeout": SOFT_SHUTDOWN_TIMEOUT_S,
        "worker_enable_soft_shutdown_on_idle": True,
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_default_queue": queue,
        "task_routes": {"lunora.*": {"queue": queue}},
        "worker_hijack_root_logger": False,
        "enable_utc": True,
        "timezone": "UTC",
    }


def make_app(broker_url: str | None = None, queue: str | None = None) -> Celery:
    """A Celery app with the Lunora reliability config and the ``lunora.*`` tasks registered."""
    celery_app = Celery("lunora", include=["workers.tasks"])
    celery_app.conf.update(
        reliability_config(broker_url or broker_url_from_env(), queue or queue_name(), visibility_timeout_s())
    )
    from workers.beat import beat_schedule
    from workers.revocations import PruneRunRevocations

    celery_app.conf.beat_schedule = beat_schedule()
    settings = Settings()
    # Beat's file goes to the data folder, never the working directory (read-only in the image).
    celery_app.conf.beat_scheduler = "workers.scheduler:LunoraScheduler"
    celery_app.conf.beat_schedule_filename = str(settings.resolved_beat_schedule())
    if any(route.priority is not None for route in settings.step_routes.values()):
        # RabbitMQ honours priorities only on queues declared with x-max-priority (Redis ignores it).
        celery_app.conf.task_queue_max_priority = 9
    celery_app.steps["worker"].add(PruneRunRevocations)
    return celery_app


app = make_app()
"""The process-wide Celery app (``celery -A workers`` and ``workers.tasks`` use this one)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``celery`` command line against :data:`app` (``lunora worker|beat|flower`` call this).

    Example::

        main(["worker", "-c", "4", "-l", "INFO"])
    """
    code = app.start([*(argv or ["worker"])])
    return int(code or 0)
