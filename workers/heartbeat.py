"""A heartbeat file for liveness probes: touched while the worker (or beat) process is alive.

A Kubernetes exec probe then only compares the file's age with a bound (``stat`` and ``date``, a few
milliseconds), instead of ``celery inspect ping``, which asks the worker through the broker: with
the broker down every worker fails that probe and is restarted, and the restarts make the outage
worse. Here the broker plays no part.

- Worker: the ``worker_init`` signal (sent in the main process before the pool and the consumer
  start) starts a daemon thread that touches ``LUNORA_HEARTBEAT_FILE`` every
  ``LUNORA_HEARTBEAT_INTERVAL`` seconds; ``worker_shutdown`` stops it and removes the file. The
  thread keeps beating while the consumer waits for a broker that is down.
- Beat: its scheduler touches the same file on every tick (``workers.scheduler``), so the file goes
  stale when beat's loop stops turning.

Readiness is a separate file, ``LUNORA_WORKER_READY_FILE``, written once the worker consumes.

Example::

    LUNORA_HEARTBEAT_FILE=/tmp/lunora-heartbeat lunora worker
    # probe: test $(( $(date +%s) - $(stat -c %Y /tmp/lunora-heartbeat) )) -lt 60
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Any

from celery import signals

from lunora_jobs.config import Settings

log = logging.getLogger(__name__)


def touch(path: Path) -> None:
    """Create ``path`` or set its modification time to now (its parent is created if missing)."""
    try:
        os.utime(path)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()


class Heartbeat:
    """Touch ``path`` now and then every ``interval`` seconds from a daemon thread until ``stop()``."""

    def __init__(self, path: Path, interval: float) -> None:
        self.path = path
        self.interval = interval
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Heartbeat:
        """Beat once (so a probe passes as soon as the process runs), then keep beating."""
        touch(self.path)
        self._thread = threading.Thread(target=self._run, name="lunora-heartbeat", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            try:
                touch(self.path)
            except OSError as exc:  # a full or read-only disk: say so, keep trying
                log.warning("lunora: cannot touch the heartbeat file %s: %s", self.path, exc)

    def stop(self) -> None:
        """Stop beating and remove the file: a stopping process is not alive any more."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 1)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


_worker_heartbeat: Heartbeat | None = None


def _start_worker_heartbeat(**_: Any) -> None:
    global _worker_heartbeat
    settings = Settings()
    if settings.heartbeat_file is None or _worker_heartbeat is not None:
        return
    _worker_heartbeat = Heartbeat(settings.heartbeat_file, settings.heartbeat_interval).start()


def _stop_worker_heartbeat(**_: Any) -> None:
    global _worker_heartbeat
    if _worker_heartbeat is not None:
        _worker_heartbeat.stop()
        _worker_heartbeat = None


signals.worker_init.connect(_start_worker_heartbeat, weak=False)
signals.worker_shutdown.connect(_stop_worker_heartbeat, weak=False)
