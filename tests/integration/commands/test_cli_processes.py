"""The operator's CLI as real subprocesses (``python -m lunora_jobs.cli``) against PostgreSQL, a Redis
broker and a Celery worker: every command once, asserting on what it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from private_redis import PrivateRedis

from workers.testing import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


@pytest.fixture
def env(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    values = {
        "CELERY_BROKER_URL": private_redis.url(1), "LUNORA_REDIS_URL": private_redis.url(0),
        "LUNORA_DATABASE_URL": pg_url, "LUNORA_QUEUE": "cli-" + uuid.uuid4().hex[:8],
        "LUNORA_APP": "cli_app:build_app", "LUNORA_ALLOW_OFFLINE_MODEL": "true",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield {**os.environ, **values}


def lunora(env: dict[str, str], *args: str, code: int = 0) -> str:
    """Run the command; its stdout (its stderr when a failure is expected)."""
    done = subprocess.run([sys.executable, "-m", "lunora_jobs.cli", *args], env=env, capture_output=True,
                          text=True, timeout=120, check=False, cwd=HERE)
    assert done.returncode == code, f"{' '.join(args)}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout if code == 0 else done.stderr


def _runs(env: dict[str, str], *filters: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in lunora(env, "runs", "list", "--json", *filters).splitlines()]


def _wait_status(env: dict[str, str], thread: str, status: str, timeout: float = 60.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while True:
        found = [r for r in _runs(env) if r["thread"] == thread and r["status"] == status]
        if found:
            return found[0]
        assert time.monotonic() < deadline, _runs(env)
        time.sleep(0.3)


def test_every_command_as_a_subprocess(env: dict[str, str]) -> None:
    assert "upgraded from an empty database to revision" in lunora(env, "db", "upgrade")
    assert "(the latest)" in lunora(env, "db", "current")
    worker = WorkerProcess(env["LUNORA_QUEUE"], env, name=env["LUNORA_QUEUE"]).start()
    try:
        assert "all configured parts answer" in lunora(env, "doctor")

        chat = lunora(env, "run", "support", "hi", "--thread", "t-1", "--follow", "--timeout", "60")
        assert "user: hi" in chat and "assistant: hello there" in chat

        waiting = lunora(env, "run", "billing", "refund me", "--thread", "t-2", "--follow", "--timeout", "60")
        assert "→ refund(" in waiting and "lunora approve t-2 call_1" in waiting
        assert "approved call_1 on thread t-2" in lunora(env, "approve", "t-2", "call_1")
        run = _wait_status(env, "t-2", "completed")
        timeline = lunora(env, "runs", "show", str(run["id"]))
        for step in ("llm:turn:0", "tool:refund:call_1", "llm:turn:1"):
            assert step in timeline

        started = json.loads(lunora(env, "run", "billing", "refund again", "--thread", "t-3", "--json"))
        _wait_status(env, "t-3", "awaiting_input")
        assert f"cancelled run {started['run_id']}" in lunora(env, "runs", "cancel", str(started["run_id"]))
        assert {r["thread"]: r["status"] for r in _runs(env)} == {
            "t-1": "completed", "t-2": "completed", "t-3": "cancelled"}

        import cli_app

        app = cli_app.build_app()
        sid = app.scheduler.run_after(3600, "support", {"input": "later"})
        app.close()
        assert sid in lunora(env, "schedules", "list", "--status", "pending")
        assert f"cancelled {sid}" in lunora(env, "schedules", "cancel", sid)
        error = lunora(env, "schedules", "cancel", sid, code=1)
        assert error.count("\n") == 1 and "is cancelled, not pending — fix:" in error
    finally:
        worker.stop(timeout=10)
