"""The API under test for real: ``lunora api`` processes (uvicorn) + a Celery worker + PostgreSQL + Redis.

Everything is namespaced: a fresh PostgreSQL database, and the test's private Redis (db 3: broker,
run locks and live-update channels), with a queue and key prefix of the stack's own.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import redis
from private_redis import flush_owned

from lunora_jobs.api.testing import ApiProcess
from workers.testing import WorkerProcess

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
REDIS_DB = 3
TERMINAL = ("completed", "failed", "cancelled")
TOKENS = {"alice": "tok-alice-0123456789", "bob": "tok-bob-0123456789", "ops": "tok-ops-0123456789"}


class ApiStack:
    """Workers, API processes and the test process's own app over one database and one Redis prefix."""

    def __init__(self, database_url: str, redis_url: str, tmp: Path, monkeypatch: Any, **env: str) -> None:
        self.prefix = "api-" + uuid.uuid4().hex[:8]
        self.queue = self.prefix + "-q"
        tokens = tmp / "tokens.json"
        tokens.write_text(json.dumps([
            {"subject": "alice", "token": TOKENS["alice"]},
            {"subject": "bob", "token": TOKENS["bob"]},
            {"subject": "ops", "token": TOKENS["ops"], "admin": True},
        ]))
        self.env = {
            "CELERY_BROKER_URL": redis_url,
            "LUNORA_QUEUE": self.queue,
            "LUNORA_DATABASE_URL": database_url,
            "LUNORA_REDIS_URL": redis_url,
            "LUNORA_APP": "api_app:app",
            "API_TEST_PREFIX": self.prefix,
            "LUNORA_API_TOKENS_FILE": str(tokens),
            "LUNORA_API_HEARTBEAT_S": "1",
            "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
            **env,
        }
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.syspath_prepend(str(HERE))
        import api_app

        self.app = api_app.build_app()
        self.app.store.ensure_tables()
        self.redis = redis.Redis.from_url(redis_url, decode_responses=True)
        self.workers: list[WorkerProcess] = []
        self.apis: list[ApiProcess] = []

    # -- processes --------------------------------------------------------------------------------
    def start_worker(self, concurrency: int = 2) -> WorkerProcess:
        """One more Celery worker on the stack's queue."""
        worker = WorkerProcess(self.queue, self.env, concurrency=concurrency,
                               name=f"{self.prefix}-{len(self.workers)}")
        self.workers.append(worker)
        return worker.start()

    def start_api(self, **env: str) -> ApiProcess:
        """One more ``lunora api`` process; returns once it answers."""
        api = ApiProcess({**self.env, **env})
        self.apis.append(api)
        return api.start()

    def start_api_on(self, port: int) -> ApiProcess:
        """A new ``lunora api`` process on ``port`` (a stopped predecessor's)."""
        api = ApiProcess(self.env)
        self.apis.append(api)
        return api.start(port=port)

    def close(self) -> None:
        """Stop everything, then empty the stack's db of the private Redis."""
        for api in self.apis:
            api.stop()
        for worker in self.workers:
            worker.stop(timeout=5)
        flush_owned(self.redis)

    def logs(self) -> str:
        """Every process's output, for assertion messages."""
        parts = [f"--- worker {w.name}\n{w.log()[-3000:]}" for w in self.workers]
        parts += [f"--- api :{a.port}\n{a.log()[-3000:]}" for a in self.apis]
        return "\n".join(parts)

    # -- helpers ----------------------------------------------------------------------------------
    @staticmethod
    def auth(who: str) -> dict[str, str]:
        """The Authorization header of a test identity."""
        return {"Authorization": f"Bearer {TOKENS[who]}"}

    def client(self, api: ApiProcess, who: str | None = None) -> httpx.Client:
        """An httpx client on ``api`` (authenticated as ``who``)."""
        return httpx.Client(base_url=api.url, headers=self.auth(who) if who else {}, timeout=30)

    def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
        """Poll ``check`` until truthy; fail with every process's log."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}\n{self.logs()}")
            time.sleep(0.05)

    def wait_status(self, run_id: str, *statuses: str, timeout: float = 60.0) -> Any:
        """The run record once its status is one of ``statuses``."""
        def check() -> Any:
            run = self.app.store.get_run(run_id)
            return run if run is not None and run.status in statuses else None

        return self.wait_for(f"run {run_id} to reach {statuses}", check, timeout)

    def stored_transcript(self, thread_key: str) -> list[dict[str, Any]]:
        """The thread's messages by seq, as the API renders them."""
        from lunora_jobs.api.views import message_view

        thread = self.app.store.get_thread(thread_key)
        assert thread is not None
        return [message_view(m).model_dump(mode="json") for m in self.app.store.list_messages(thread.id)]
