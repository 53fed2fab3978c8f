"""Tracing in worker processes: the exporter from Settings, and the last batch sent before exit.

``worker_init`` (the main process, before the pool forks) installs the ``TracerProvider`` that
``LUNORA_OTEL_EXPORTER`` asks for; the SDK's batch processor restarts its thread in each forked pool
process. A pool process flushes its batch on ``worker_process_shutdown`` and the main process on
``worker_shutdown``, so a deploy loses no span. With the default ``LUNORA_OTEL_EXPORTER=none``
nothing is installed and nothing is connected to the task path.
"""

from __future__ import annotations

from typing import Any

from celery import signals

from lunora_jobs.config import Settings
from lunora_jobs.telemetry.export import configure_tracing, flush_tracing


def _configure(**_: Any) -> None:
    configure_tracing(Settings())


def _flush(**_: Any) -> None:
    flush_tracing()


signals.worker_init.connect(_configure, weak=False)
signals.beat_init.connect(_configure, weak=False)
signals.worker_process_shutdown.connect(_flush, weak=False)
signals.worker_shutdown.connect(_flush, weak=False)
