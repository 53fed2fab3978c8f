"""Beat's sweep tick does not clutter Flower or the logs: no task events and no log lines for a tick
that found nothing, on a real beat and worker (task events on, INFO logs), while the steps of a run
still show up in both and a sweep that recovered something says so."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
from image_support import wait_for

from lunora_jobs.engine.dispatch import StepTask
from workers.celery_app import make_app
from workers.testing import BeatProcess, WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REDIS_BASE = os.environ.get("LUNORA_TEST_REDIS_BASE", "redis://127.0.0.1:6379")
BROKER = f"{REDIS_BASE}/14"


class DroppingDispatcher:
    """Loses every dispatch: the run can only move through beat's sweep."""

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        """Drop ``tasks``."""

    def revoke(self, run_id: str) -> None:
        """Nothing to revoke."""


class TaskEvents:
    """Collects the task events of one worker from the broker, as Flower does."""

    def __init__(self, queue: str, hostname: str) -> None:
        self.app = make_app(BROKER, queue)
        self.hostname = hostname
        self.events: list[dict[str, Any]] = []
        self._receiver: Any = None
        self._thread = threading.Thread(target=self._capture, daemon=True)

    def _capture(self) -> None:
        with self.app.connection_for_read() as conn:
            self._receiver = self.app.events.Receiver(conn, handlers={"*": self.events.append})
            self._receiver.capture(limit=None, timeout=None, wakeup=False)

    def start(self) -> TaskEvents:
        """Subscribe before the worker starts sending."""
        self._thread.start()
        wait_for(lambda: self._receiver is not None, 20, "the event receiver did not start")
        return self

    def stop(self) -> None:
        """Stop capturing."""
        if self._receiver is not None:
            self._receiver.should_stop = True
        self._thread.join(timeout=10)

    def task_names(self) -> set[str]:
        """Names of the tasks this worker sent events for (``task-received`` carries the name)."""
        return {e.get("name") for e in self.events if e.get("hostname") == self.hostname and e.get("name")}


@pytest.fixture
def prefix() -> Iterator[str]:
    name = "quiet-" + uuid.uuid4().hex[:8]
    yield name
    client = redis.Redis.from_url(BROKER)
    client.delete(*[key for key in client.scan_iter(f"{name}*")], f"_kombu.binding.{name}-q",
                 f"_kombu.binding_permanent.{name}-q")


def _sweeps_run(app: Any, hostname: str) -> int:
    stats = app.control.inspect([hostname], timeout=5).stats() or {}
    return int(stats.get(hostname, {}).get("total", {}).get("lunora.sweep", 0))


def test_idle_sweeps_send_no_events_and_log_nothing(
    prefix: str, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = prefix + "-q"
    env = {
        "CELERY_BROKER_URL": BROKER, "LUNORA_DATABASE_URL": pg_url, "LUNORA_REDIS_URL": BROKER,
        "LUNORA_APP": "deploy_app:app", "DEPLOY_PREFIX": prefix,
        "LUNORA_SWEEP_INTERVAL": "0.3", "LUNORA_SWEEP_GRACE_MS": "300",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(HERE))
    worker = WorkerProcess(queue, env, concurrency=1, loglevel="INFO", name=prefix, extra_args=["-E"])
    hostname = worker.name + "@" + os.uname().nodename
    events = TaskEvents(queue, hostname).start()
    beat = BeatProcess(queue, env, loglevel="INFO", name=prefix + "-beat")
    try:
        worker.start(timeout=60)
        beat.start()
        from deploy_app import router

        from lunora_jobs.runtime import Lunora

        app = Lunora([router], database_url=pg_url, dispatcher=DroppingDispatcher())
        try:
            handle = app.agents.router.run(input="where?", thread_key=prefix)
            wait_for(lambda: app.agents.router.status(handle.id) == "completed", 90,
                     "the sweep never recovered the run", lambda: worker.log() + beat.log(),
                     alive=[p for p in (worker.proc, beat.proc) if p is not None])
        finally:
            app.close()
        # Idle ticks keep coming after the run is done.
        control = events.app
        after = _sweeps_run(control, hostname)
        wait_for(lambda: _sweeps_run(control, hostname) >= after + 5, 60, "beat's ticks stopped", beat.log)
    finally:
        beat.stop()
        worker.stop()
        events.stop()

    worker_log, beat_log = worker.log(), beat.log()
    # The run's steps are in Flower's feed and the log; the ticks are in neither.
    assert {"lunora.turn", "lunora.tool"} <= events.task_names(), events.task_names()
    assert "lunora.sweep" not in events.task_names()
    assert "Task lunora.turn[" in worker_log  # Celery's per-task lines are on (INFO)...
    assert "Task lunora.sweep[" not in worker_log, worker_log  # ...but not for the ticks
    assert "lunora sweep: re-dispatched" in worker_log  # the recovery is logged
    assert "beat: Starting" in beat_log and "lunora-sweep" not in beat_log, beat_log
