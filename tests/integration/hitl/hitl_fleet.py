"""Real ``celery worker`` processes on a private Redis over a fresh PostgreSQL database.

Reuses ``tests/worker_fleet.WorkerFleet``. The Redis db (broker, run lock, the test app's counters)
is a db of the test's own ``redis-server`` (the ``private_redis`` fixture), so it is flushed when
a fleet starts (leftovers of an earlier test) and when it closes, and ``broker_backlog`` may count
Celery's db-wide ``unacked`` hash.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from worker_fleet import WorkerFleet, unique_prefix

HERE = Path(__file__).resolve().parent
TERMINAL = ("completed", "failed", "cancelled")


class HitlFleet(WorkerFleet):
    """Workers plus the test process's own app (``hitl_app``), on one broker queue and one database."""

    def __init__(self, database_url: str, redis_url: str, monkeypatch: Any) -> None:
        prefix = unique_prefix("hitl")
        super().__init__(database_url, redis_url, monkeypatch, app_module="hitl_app", here=HERE,
                         prefix=prefix, env={"HITL_REDIS_URL": redis_url, "HITL_PREFIX": prefix})

    def broker_backlog(self) -> dict[str, int]:
        """Messages waiting in the queue and Celery's ``unacked`` copies (only with
        ``LUNORA_VISIBILITY_TIMEOUT`` set; by default a task in progress is in its worker's memory
        alone, and its step's live lease in the ledger is what shows it)."""
        waiting = sum(int(self.redis.llen(k)) for k in self.redis.scan_iter(f"{self.queue}*"))
        return {"queued": waiting, "unacked": int(self.redis.hlen("unacked"))}

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
