"""Prometheus metrics from a worker: its pool processes count, its main process serves the sum.

With ``LUNORA_METRICS_PORT`` set, ``lunora worker`` points ``prometheus_client`` at the worker's
multiprocess directory before anything imports it, and ``worker_init`` (the main process, before
the pool forks) empties that directory, registers ``MetricsHooks`` on the app (the
pool processes inherit them and write their own files) and serves ``/metrics`` on
``LUNORA_METRICS_ADDRESS:LUNORA_METRICS_PORT`` with the sum over the pool, plus the gauges read at
scrape time (queue depth from a Redis broker, runs waiting for an approval). A pool process that
exits is marked dead, so its gauges leave the sum. Unset: nothing is imported or connected.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from celery import signals

from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError
from workers.app_loader import get_app

log = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_serving: list[bool] = []


def metrics_directory(settings: Settings) -> Path:
    """The multiprocess directory a worker uses (see ``Settings.metrics_dir``)."""
    return (settings.prometheus_multiproc_dir or settings.metrics_dir
            or settings.data_dir / f"prometheus-{os.getpid()}")


def prepare_metrics_directory(settings: Settings) -> Path | None:
    """Before the worker's command line runs (``lunora worker``): point ``prometheus_client`` at the
    worker's directory while nothing has imported it yet. None when metrics are off."""
    if settings.metrics_port is None:
        return None
    directory = metrics_directory(settings)
    os.environ[MULTIPROC_ENV] = str(directory)  # prometheus_client reads it when first imported
    return directory


def start_metrics(settings: Settings, broker_url: str | None, queues: list[str]) -> Any:
    """Empty the multiprocess directory, register the hooks on the app, serve ``/metrics``;
    returns the HTTP server (None when ``metrics_port`` is unset)."""
    if settings.metrics_port is None:
        return None
    if settings.prometheus_multiproc_dir is None:
        if "prometheus_client" in sys.modules:
            raise ConfigurationError(
                "LUNORA_METRICS_PORT is set, but prometheus_client was imported before the worker could "
                f"point it at a multiprocess directory (Flower's Celery plugin does that): set "
                f"{MULTIPROC_ENV}=/path/to/an/empty/dir for the worker, or start it with `lunora worker`."
            )
        prepare_metrics_directory(settings)
    directory = metrics_directory(settings)
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):  # a previous run's files would be summed with ours
        stale.unlink()
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    from lunora_jobs.telemetry.metrics import MetricsHooks, ScrapeTimeGauges, redis_queue_depths

    app = get_app()
    app.hooks.add(MetricsHooks())
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    depths = None
    if broker_url and broker_url.startswith(("redis://", "rediss://")):
        import redis

        depths = redis_queue_depths(redis.Redis.from_url(broker_url), queues)
    registry.register(ScrapeTimeGauges(depths, lambda: len(app.store.list_runs(status="awaiting_input"))))
    server, _thread = start_http_server(settings.metrics_port, settings.metrics_address, registry)
    _serving.append(True)
    log.info("lunora: metrics on http://%s:%s/metrics", settings.metrics_address, settings.metrics_port)
    return server


def _on_worker_init(sender: Any = None, **_: Any) -> None:
    settings = Settings()
    if settings.metrics_port is None:
        return
    conf = getattr(getattr(sender, "app", None), "conf", None)
    queues = sorted({settings.queue, *(route.queue for route in settings.step_routes.values())})
    start_metrics(settings, getattr(conf, "broker_url", None) or settings.broker_url, queues)


def _on_process_shutdown(**_: Any) -> None:
    if not _serving:  # inherited by the pool processes through the fork
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]


signals.worker_init.connect(_on_worker_init, weak=False)
signals.worker_process_shutdown.connect(_on_process_shutdown, weak=False)
