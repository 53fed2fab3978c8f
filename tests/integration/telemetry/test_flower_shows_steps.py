"""``lunora flower`` against the real broker and a real worker: a run's steps, named for what they
are (``lunora.turn``, ``lunora.tool``) with the run id and step name, found through Flower's HTTP API."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ports import free_port
from private_redis import PrivateRedis
from suite_settings import require_module

from workers.testing import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]
require_module("flower")  # the `flower` extra (in all-tests)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
AUTH = ("ops", "s3cret")


def _poll(check: Any, timeout: float, explain: Any) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = check()
        except httpx.HTTPError:
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, explain()
        time.sleep(0.25)


@pytest.fixture
def stack(pg_url: str, private_redis: PrivateRedis, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str, dict[str, str]]]:
    prefix = "flower-" + uuid.uuid4().hex[:8]
    env = {
        "CELERY_BROKER_URL": private_redis.url(1), "LUNORA_QUEUE": f"{prefix}-q",
        "LUNORA_DATABASE_URL": pg_url, "LUNORA_REDIS_URL": private_redis.url(0),
        "LUNORA_APP": "traced_app:build_app", "TRACED_REDIS_URL": private_redis.url(0),
        "TRACED_PREFIX": prefix,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(HERE))
    import traced_app

    app = traced_app.build_app()
    app.store.ensure_tables()
    port = free_port()
    log_path = tmp_path / "flower.log"
    with log_path.open("wb") as log:
        flower = subprocess.Popen(
            [sys.executable, "-m", "lunora_jobs.cli", "flower", f"--port={port}", "--address=127.0.0.1"],
            env={**os.environ, **env, "FLOWER_BASIC_AUTH": ":".join(AUTH)}, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
    worker = WorkerProcess(env["LUNORA_QUEUE"], {**env, "LUNORA_TASK_EVENTS": "true"}, concurrency=2,
                           name=prefix)
    url = f"http://127.0.0.1:{port}"
    try:
        _poll(lambda: httpx.get(f"{url}/healthcheck", timeout=2).status_code == 200, 60, log_path.read_text)
        worker.start()
        yield app, url, {"log": str(log_path)}
    finally:
        worker.stop(timeout=10)
        os.killpg(flower.pid, signal.SIGTERM)
        flower.wait(timeout=20)
        private_redis.client(0).delete(f"{prefix}:entered")
        private_redis.client(1).delete(env["LUNORA_QUEUE"])


def test_flower_lists_a_runs_steps_by_name_with_run_id_and_step(
    stack: tuple[Any, str, dict[str, str]],
) -> None:
    app, url, paths = stack
    # The worker sends task events from its start (LUNORA_TASK_EVENTS); Flower must know it first.
    _poll(lambda: httpx.get(f"{url}/api/workers", params={"refresh": "true"}, auth=AUTH, timeout=10).json(),
          60, lambda: Path(paths["log"]).read_text())
    handle = app.agents.traced.run(input="go", thread_key=f"t-{uuid.uuid4().hex[:6]}")
    steps = {"llm:turn:0": "lunora.turn", "tool:pair:p1": "lunora.tool", "tool:pair:p2": "lunora.tool",
             "llm:turn:1": "lunora.turn"}

    def listed() -> dict[str, Any] | None:
        tasks = httpx.get(f"{url}/api/tasks", auth=AUTH, timeout=10).json()
        mine = {task["args"]: task for task in tasks.values() if handle.id in str(task.get("args"))}
        done = {args: t for args, t in mine.items() if t.get("state") == "SUCCESS"}
        return done if len(done) == len(steps) else None

    tasks = _poll(listed, 60, lambda: httpx.get(f"{url}/api/tasks", auth=AUTH, timeout=10).text[-3000:])
    for step, name in steps.items():
        args = repr((handle.id, step))
        assert tasks[args]["name"] == name, tasks[args]
        assert tasks[args]["uuid"] == f"{handle.id}:{step}"  # the task id names the run and the step
    assert app.store.get_run(handle.id).status == "completed"
