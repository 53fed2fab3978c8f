"""An MCP round trip in real Celery worker processes (prefork): the server is listed once when the
app loads, each forked pool process opens its own stdio session (none shares its parent's pipe), and
each call is one memoized tool step."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pytest
from private_redis import PrivateRedis
from suite_settings import require_module

from workers.testing import WorkerProcess

require_module("mcp", extra="mcp")

pytestmark = [pytest.mark.integration, pytest.mark.slow]
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def test_mcp_tools_run_as_tool_steps_on_a_prefork_worker(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    prefix = "mcpw-" + uuid.uuid4().hex[:8]
    calls, pids = tmp_path / "calls.log", tmp_path / "pids"
    env = {
        "CELERY_BROKER_URL": private_redis.url(1), "LUNORA_QUEUE": prefix + "-q",
        "LUNORA_DATABASE_URL": pg_url, "LUNORA_REDIS_URL": private_redis.url(0),
        "LUNORA_APP": "mcp_worker_app:build_app", "MCP_FLEET_PREFIX": prefix,
        "MCP_CALL_LOG": str(calls), "MCP_PID_FILE": str(pids),
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(HERE))
    import mcp_worker_app

    app = mcp_worker_app.build_app()  # lists the server in this process (one more server pid)
    app.store.ensure_tables()
    worker = WorkerProcess(env["LUNORA_QUEUE"], env, concurrency=2).start(timeout=120)
    try:
        handle = app.agents.mcp_fleet.run(input="go", thread_key="mcp-fleet-1")
        deadline = time.monotonic() + 120
        while (run := app.store.get_run(handle.id)) is None or run.status not in ("completed", "failed"):
            assert time.monotonic() < deadline, worker.log()
            time.sleep(0.2)
        assert run.status == "completed", (run, worker.log())
        steps = {s.name: s for s in app.store.list_steps(handle.id)}
        assert steps["tool:m_add:w1"].result["output"] == {"result": 42}
        assert steps["tool:m_shout:w2"].result["output"] == {"result": "FLEET"}
        assert all(s.attempt == 1 for s in steps.values()), steps
        messages = app.threads.messages("mcp-fleet-1", trusted=True)
        assert [json.loads(m.content) for m in messages if m.role == "tool"] == [
            {"result": 42}, {"result": "FLEET"}]
        assert sorted(calls.read_text().split()) == ["add", "shout"]
        # Listed by this process and by the worker's parent; called from pool processes' own sessions.
        pool = set(worker.pool_pids())
        server_parents = {_parent_of(int(p)) for p in pids.read_text().split()}
        assert server_parents & pool, (server_parents, pool)
    finally:
        worker.stop()
        app.close()


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None  # a listing's server has exited with its session
    return int(stat.rsplit(")", 1)[1].split()[1])
