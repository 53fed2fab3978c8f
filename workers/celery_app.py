"""The Celery app of the worker fleet, configured for at-least-once delivery.

``celery -A workers worker`` finds ``app`` through ``workers/__init__.py``; ``lunora worker`` is the
same command (see :func:`main`). Nothing here names a user's agents: the tasks load the user's
``Lunora`` app from ``LUNORA_APP`` (``"myproject.agents:app"``), so one worker image runs any project.

Configuration comes from ``lunora_jobs.config.Settings``:

- ``CELERY_BROKER_URL``: the broker (``redis://...``; ``amqp://`` works too). There is no default: a
  worker or beat started without one stops with an error, exactly as the app side treats an unset
  broker as "run steps in-process". A ``redis://`` broker runs on ``workers.redis_transport`` (kombu's
  transport, without a redis-py client built per publish and per ack).
- ``LUNORA_QUEUE``: the queue every ``lunora.*`` task is routed to and the worker consumes by default
  (default ``lunora``) — tests and benchmarks isolate themselves with a private name.
- ``LUNORA_VISIBILITY_TIMEOUT``: on a Redis broker, 0 (the default) keeps no broker copy of a
  delivered message: a message lost with its worker is re-dispatched by the sweep from the step
  ledger (see :func:`redelivery_options`). N > 0 turns on kombu's redelivery of an unacknowledged
  message after N seconds; N must then be longer than the longest step (an agent's
  ``step_timeout_s``), or a slow step is delivered twice (the ledger dedupes; the work is wasted).
- ``LUNORA_SWEEP_INTERVAL``: seconds between sweep ticks of beat (default 5, see ``workers.beat``).
- ``LUNORA_STEP_ROUTES``: step kind -> queue and priority (see ``workers.dispatch``).
- ``LUNORA_BEAT_SCHEDULE``, ``LUNORA_HEARTBEAT_FILE``: beat's schedule file and the liveness heartbeat
  (see ``workers.scheduler`` and ``workers.heartbeat``).

Example::

    CELERY_BROKER_URL=redis://localhost:6379/0 LUNORA_APP=myproject.agents:app lunora worker -c 4
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

from celery import Celery, signals

# Imported for the worker signals they connect: the heartbeat file, the Prometheus metrics of
# LUNORA_METRICS_PORT, the span exporter of LUNORA_OTEL_EXPORTER.
import workers.heartbeat
import workers.metrics
import workers.telemetry
from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError
from workers import quiet_ticks, redis_transport
from workers.beat import beat_schedule
from workers.pools import SupportedPool
from workers.revocations import PruneRunRevocations
from workers.solo_limits import SoloTimeLimits

quiet_ticks.install()

SOFT_SHUTDOWN_TIMEOUT_S = 30.0
NO_BROKER = (
    "CELERY_BROKER_URL is not set: without a broker Lunora runs steps in-process and needs no worker. "
    "To run a worker fleet, set CELERY_BROKER_URL (e.g. redis://127.0.0.1:6379/0) on the app and on "
    "every worker and beat."
)
NO_FLOWER = 'lunora flower needs Flower, an optional extra: pip install "lunora-jobs[flower]"'


def require_broker_url(settings: Settings | None = None) -> str:
    """The broker named by ``CELERY_BROKER_URL``; ``ConfigurationError`` when there is none."""
    url = (settings or Settings()).broker_url
    if not url:
        raise ConfigurationError(NO_BROKER)
    return url


def redelivery_options(visibility_timeout: int) -> dict[str, Any]:
    """The broker transport options for ``LUNORA_VISIBILITY_TIMEOUT``.

    0: kombu's ack emulation off. On Redis, kombu otherwise copies every delivered message into an
    ``unacked`` hash (one round trip from the worker's consumer) and deletes it at the ack (another),
    to redeliver it if the worker vanishes before acking, once the visibility timeout has passed (an
    hour by default). The step ledger makes that copy redundant: the sweep re-dispatches a lost
    message's step once its lease lapsed (a claimed step) or its run was quiet for the sweep's grace
    (30 s), long before such a redelivery, which the claim would only dedupe. A pool process that
    dies mid-task still has its message requeued at once by its worker
    (``task_reject_on_worker_lost``). Without the two round trips the engine's steps/s at 30 runs in
    flight is 1.10-1.14x (``python bench/redelivery.py``), and a raw Celery hop on these settings and
    ``workers.redis_transport`` costs 0.64x the stock one (``python bench/peers.py --ladder``, "raw
    Celery chain on Lunora's Redis transport").

    N > 0: kombu's ack emulation with an N-second visibility timeout (Celery's behaviour; N longer
    than the longest step, or Redis redelivers a live one).
    """
    if visibility_timeout > 0:
        return {"visibility_timeout": visibility_timeout}
    return {"ack_emulation": False}


def reliability_config(broker_url: str | None, queue: str, visibility_timeout: int) -> dict[str, Any]:
    """The Celery settings behind "a crashed worker or a lost message never loses a run".

    Returned as a plain dict so the benchmark's raw-Celery baseline runs on the same settings.
    ``visibility_timeout`` 0: on Redis, kombu's ack emulation is off (no broker copy of a delivered
    message, see ``redelivery_options``); N > 0: kombu redelivers an unacked message after N s.
    """
    transport_options = redelivery_options(visibility_timeout)
    backend_options = {"visibility_timeout": visibility_timeout} if visibility_timeout > 0 else {}
    return {
        "broker_url": broker_url,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": transport_options,
        # Same value on both sides, as Celery's docs ask, in case a user turns a result backend on.
        "result_backend_transport_options": backend_options,
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
    """A Celery app with the Lunora reliability config and the ``lunora.*`` tasks registered.

    Without a broker (argument or ``CELERY_BROKER_URL``) the app is still built, so the module can
    be imported anywhere; a worker or beat started on it stops with ``ConfigurationError``.
    """
    settings = Settings()
    celery_app = Celery("lunora", include=["workers.tasks"])
    broker = broker_url or settings.broker_url
    celery_app.conf.update(reliability_config(broker, queue or settings.queue, settings.visibility_timeout))
    if broker and redis_transport.serves(broker):
        # kombu's own Redis transport, minus a redis-py client built per publish and per ack.
        celery_app.conf.broker_transport = redis_transport.TRANSPORT
    celery_app.conf.worker_send_task_events = settings.task_events  # Flower's task view (LUNORA_TASK_EVENTS)
    celery_app.conf.beat_schedule = beat_schedule(settings.sweep_interval)
    # Beat's file goes to the data folder, never the working directory (read-only in the image).
    celery_app.conf.beat_scheduler = "workers.scheduler:LunoraScheduler"
    celery_app.conf.beat_schedule_filename = str(settings.resolved_beat_schedule())
    if any(route.priority is not None for route in settings.step_routes.values()):
        # RabbitMQ honours priorities only on queues declared with x-max-priority (Redis ignores it).
        celery_app.conf.task_queue_max_priority = 9
    celery_app.steps["worker"].add(PruneRunRevocations)
    celery_app.steps["worker"].add(SupportedPool)  # prefork or solo: the pools that keep the time limits
    celery_app.steps["worker"].add(SoloTimeLimits)  # time limits on --pool solo, as prefork has them
    return celery_app


def _require_broker(sender: Any = None, **_: Any) -> None:
    """A worker or beat with no broker configured would fall back to Celery's own default (a local
    AMQP server) and wait there for tasks no producer sends: refuse to start instead."""
    conf = getattr(getattr(sender, "app", None), "conf", None)
    if conf is not None and not conf.broker_url:
        raise ConfigurationError(NO_BROKER)


signals.worker_init.connect(_require_broker, weak=False)
signals.beat_init.connect(_require_broker, weak=False)


app = make_app()
"""The process-wide Celery app (``celery -A workers`` and ``workers.tasks`` use this one)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``celery`` command line against :data:`app` (``lunora worker|beat|flower`` call this).

    Example::

        main(["worker", "-c", "4", "-l", "INFO"])
    """
    args = [*(argv or ["worker"])]
    wants_help = "-h" in args or "--help" in args
    if args[0] in ("worker", "beat", "flower") and not wants_help and not app.conf.broker_url:
        raise ConfigurationError(NO_BROKER)
    if args[0] == "flower" and importlib.util.find_spec("flower") is None:
        raise ConfigurationError(NO_FLOWER)  # celery alone would answer "No such command 'flower'"
    if args[0] == "worker" and not wants_help:
        workers.metrics.prepare_metrics_directory(Settings())
    code = app.start(args)
    return int(code or 0)
