"""Real ``celery worker`` processes on a private Redis over a fresh PostgreSQL database.

Reuses ``workers.testing.WorkerProcess``. The Redis db (broker, run lock, the test app's counters)
is a db of the session's own ``redis-server`` (the ``private_redis`` fixture), so it is flushed when
a fleet starts (leftovers of an earlier test) and when it closes, and ``broker_backlog`` may count
Celery's db-wide ``unacked`` hash.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from workers.testing import WorkerProcess

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
TERMINAL = ("completed", "failed", "cancelled")


class HitlFleet:
    """Workers plus the test process's own app, on one broker queue and one database."""

    def __init__(self, database_url: str, redis_url: str, monkeypatch: Any) -> None:
        self.redis_url = redis_url
        self.prefix = "hitl-" + uuid.uuid4().hex[:8]
        self.queue = self.prefix + "-q"
        self.env = {
            "CELERY_BROKER_URL": redis_url,
            "LUNORA_QUEUE": self.queue,
            "LUNORA_DATABASE_URL": database_url,
            "LUNORA_REDIS_URL": redis_url,
            "LUNORA_APP": "hitl_app:build_app",
            "HITL_REDIS_URL": redis_url,
            "HITL_PREFIX": self.prefix,
            "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.syspath_prepend(str(HERE))
        self.redis = redis.Redis.from_url(redis_url, decode_responses=True)
        self.redis.flushdb()
        import hitl_app

        self.app = hitl_app.build_app()
        self.app.store.ensure_tables()
        self.workers: list[WorkerProcess] = []

    def key(self, name: str) -> str:
        """A key of the test app's counters."""
        return f"{self.prefix}:{name}"

    def start_worker(self, concurrency: int = 2) -> WorkerProcess:
        """One more worker on the queue, consuming when this returns."""
        name = f"{self.prefix}-{len(self.workers)}"
        worker = WorkerProcess(self.queue, self.env, concurrency=concurrency, name=name)
        self.workers.append(worker)
        return worker.start()

    def close(self) -> None:
        """Stop every worker, then drop everything on the fleet's (private) Redis db."""
        for worker in self.workers:
            worker.stop(timeout=5)
        self.redis.flushdb()

    def logs(self) -> str:
        """The workers' output, for assertion messages."""
        return "\n".join(f"--- {w.name}\n{w.log()[-3000:]}" for w in self.workers)

    def broker_backlog(self) -> dict[str, int]:
        """Messages waiting in the queue and delivered-but-unacked ones (a task in progress)."""
        waiting = sum(int(self.redis.llen(k)) for k in self.redis.scan_iter(f"{self.queue}*"))
        return {"queued": waiting, "unacked": int(self.redis.hlen("unacked"))}

    def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
        """Poll ``check`` until it returns something truthy; fail with the workers' logs."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}\n{self.logs()}")
            time.sleep(0.05)

    def wait_status(self, run_id: str, *statuses: str, timeout: float = 60.0) -> Any:
        """The run once its status is one of ``statuses``."""
        def check() -> Any:
            run = self.app.store.get_run(run_id)
            return run if run is not None and run.status in statuses else None

        return self.wait_for(f"run {run_id} to reach {statuses}", check, timeout)

    def in_other_process(self, code: str) -> str:
        """Run ``code`` (with ``app = hitl_app.build_app()`` in scope) in a fresh interpreter; its stdout."""
        script = f"import hitl_app\napp = hitl_app.build_app()\n{code}"
        env = {**os.environ, **self.env}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def release(self, tokens: int = 1) -> None:
        """Let ``tokens`` blocking tool executions finish."""
        self.redis.rpush(self.key("release"), *(["go"] * tokens))
