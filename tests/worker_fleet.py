"""``WorkerFleet``: real ``celery worker`` (and beat) processes on a private Redis db over one database,
plus the test process's own copy of the user app — the base of the worker-level test fleets.

The user app is ``<app_module>:build_app`` from ``here`` (put on PYTHONPATH for the workers and on
``sys.path`` for the test). The Redis db is the test's own (a ``private_redis`` db): it is flushed when
the fleet starts (leftovers of an earlier test) and when it closes.
"""

from __future__ import annotations

import importlib
import os
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import redis
from private_redis import flush_owned

from workers.testing import BeatProcess, WorkerProcess

ROOT = Path(__file__).resolve().parents[1]


def unique_prefix(name: str) -> str:
    """``<name>-<8 hex>``: a fresh prefix for one fleet's queue and keys."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


class WorkerFleet:
    """Workers plus the test process's own app, on one broker queue and one database.

    ``env`` adds to the processes' environment (and this one's) what the test app reads.
    """

    def __init__(
        self, database_url: str, redis_url: str, monkeypatch: Any, *, app_module: str, here: Path,
        prefix: str, env: Mapping[str, str] | None = None,
    ) -> None:
        self.redis_url = redis_url
        self.prefix = prefix
        """Names the queue and the test app's keys: unique per fleet (``unique_prefix``)."""
        self.queue = self.prefix + "-q"
        self.env = {
            "CELERY_BROKER_URL": redis_url, "LUNORA_QUEUE": self.queue, "LUNORA_DATABASE_URL": database_url,
            "LUNORA_REDIS_URL": redis_url, "LUNORA_APP": f"{app_module}:build_app",
            "PYTHONPATH": os.pathsep.join([str(here), str(ROOT), os.environ.get("PYTHONPATH", "")]),
            **dict(env or {}),
        }
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.syspath_prepend(str(here))
        self.redis = redis.Redis.from_url(redis_url, decode_responses=True)
        flush_owned(self.redis)
        self.app = importlib.import_module(app_module).build_app()
        self.app.store.ensure_tables()
        self.workers: list[WorkerProcess] = []

    def key(self, name: str) -> str:
        """A key of the test app's counters."""
        return f"{self.prefix}:{name}"

    def start_worker(self, concurrency: int = 2) -> WorkerProcess:
        """One more worker on the queue, consuming when this returns."""
        worker = WorkerProcess(self.queue, self.env, concurrency=concurrency,
                               name=f"{self.prefix}-{len(self.workers)}")
        self.workers.append(worker)
        return worker.start()

    def start_beat(self, heartbeat_file: Path | None = None) -> BeatProcess:
        """Beat on the fleet's queue; it touches ``heartbeat_file`` on every tick (the first touch:
        beat is up, with the entries of the app)."""
        env = dict(self.env)
        if heartbeat_file is not None:
            env["LUNORA_HEARTBEAT_FILE"] = str(heartbeat_file)
        beat = BeatProcess(self.queue, env, name=f"{self.prefix}-beat")
        self.workers.append(beat)
        return beat.start()

    def close(self) -> None:
        """Stop every process, then drop everything on the fleet's (private) Redis db."""
        for worker in self.workers:
            worker.stop(timeout=5)
        flush_owned(self.redis)

    def logs(self) -> str:
        """The processes' output, for assertion messages."""
        return "\n".join(f"--- {w.name}\n{w.log()[-3000:]}" for w in self.workers)

    def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
        """Poll ``check`` until it returns something truthy; fail with the processes' logs."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{self.logs()}")
            time.sleep(0.05)

    def wait_status(self, run_id: str, *statuses: str, timeout: float = 60.0) -> Any:
        """The run once its status is one of ``statuses``."""
        def check() -> Any:
            run = self.app.store.get_run(run_id)
            return run if run is not None and run.status in statuses else None

        return self.wait_for(f"run {run_id} to reach {statuses}", check, timeout)
