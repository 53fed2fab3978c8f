"""Worker pools per queue, as the chart configures them: a routed step lands on its queue (in the Redis
list KEDA watches) and is run by the pool consuming that queue, on real workers, Redis and PostgreSQL."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from helm_support import named, render

from lunora_jobs.engine.dispatch import StepTask
from workers.dispatch import CeleryDispatcher
from workers.testing import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REDIS_BASE = os.environ.get("LUNORA_TEST_REDIS_BASE", "redis://127.0.0.1:6379")
BROKER = f"{REDIS_BASE}/14"


class PoolWorker(WorkerProcess):
    """A worker started with the arguments the chart renders for a pool (``--queues=...``)."""

    def __init__(self, args: list[str], env: dict[str, str], name: str) -> None:
        super().__init__(env["LUNORA_QUEUE"], env, concurrency=1, name=name)
        # The chart's args, less the hostname (the test's own, unique) and the loglevel.
        own = ("--hostname", "--loglevel", "--concurrency")
        self.pool_args = [a for a in args[1:] if not a.startswith(own)]

    def command(self) -> list[str]:
        """``celery -A workers worker`` with the pool's rendered arguments."""
        base = super().command()
        at = base.index("-Q")
        return [*base[:at], *base[at + 2:], *self.pool_args]


@pytest.fixture
def names() -> Iterator[dict[str, str]]:
    prefix = "routing-" + uuid.uuid4().hex[:8]
    queues = {"prefix": prefix, "default": prefix + "-q", "tools": prefix + "-tools"}
    yield queues
    client = redis.Redis.from_url(BROKER)
    for queue in (queues["default"], queues["tools"]):
        client.delete(*[key for key in client.scan_iter(f"{queue}*")], f"_kombu.binding.{queue}",
                      f"_kombu.binding_permanent.{queue}")


def _chart(names: dict[str, str]) -> list[dict[str, Any]]:
    return render({
        "defaultQueue": names["default"],
        "routes": {"tool": {"queue": names["tools"], "priority": 6}},
        "env": {"CELERY_BROKER_URL": BROKER},
        "worker": {"pools": {"tools": {"queues": [names["tools"]], "keda": {"enabled": True}}}},
    })


def _pool_env(objects: list[dict[str, Any]], pg_url: str, prefix: str) -> dict[str, str]:
    """What every pod of the chart gets from its ConfigMap, plus this test's services."""
    config = named(objects, "ConfigMap", "jobs-lunora-jobs")["data"]
    return {
        "LUNORA_QUEUE": config["LUNORA_QUEUE"],
        "LUNORA_STEP_ROUTES": config["LUNORA_STEP_ROUTES"],
        "CELERY_BROKER_URL": BROKER,
        "LUNORA_DATABASE_URL": pg_url,
        "LUNORA_REDIS_URL": BROKER,
        "LUNORA_APP": "deploy_app:app",
        "DEPLOY_PREFIX": prefix,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def test_a_routed_step_goes_to_its_queue_and_the_list_keda_watches(
    names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = _chart(names)
    for key, value in _pool_env(objects, "", names["prefix"]).items():
        monkeypatch.setenv(key, value)
    run = names["prefix"]
    CeleryDispatcher().dispatch([StepTask(run, "tool:find:c1", "tool"), StepTask(run, "llm:turn:1", "turn")])

    client = redis.Redis.from_url(BROKER)
    keda = named(objects, "ScaledObject", "jobs-lunora-jobs-worker-tools")
    watched = [t["metadata"]["listName"] for t in keda["spec"]["triggers"]]
    tool_list = f"{names['tools']}\x06\x166"  # kombu keeps priority 6 in its own list
    assert watched == [names["tools"], tool_list]
    def tasks(key: str) -> list[str]:
        return [json.loads(m)["headers"]["task"] for m in client.lrange(key, 0, -1)]

    assert tasks(tool_list) == ["lunora.tool"] and tasks(names["tools"]) == []
    assert tasks(names["default"]) == ["lunora.turn"]


def test_each_pool_runs_the_steps_routed_to_it(
    names: dict[str, str], pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = _chart(names)
    env = _pool_env(objects, pg_url, names["prefix"])
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(HERE))
    workers: list[PoolWorker] = []
    try:
        for pool in ("default", "tools"):
            deployment = named(objects, "Deployment", f"jobs-lunora-jobs-worker-{pool}")
            args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
            worker = PoolWorker(args, {**env, "DEPLOY_POOL": pool}, name=f"{names['prefix']}-{pool}")
            workers.append(worker)
            worker.start(timeout=60)
        import deploy_app

        app = deploy_app.app
        app.store.ensure_tables()
        handle = app.agents.router.run(input="where?", thread_key=names["prefix"])
        result = app.agents.router.wait(handle.id, timeout=90)
        logs = "\n".join(w.log()[-3000:] for w in workers)
        assert result.stopped == "final", logs
        tools = [m.content for m in app.threads.messages(names["prefix"]) if m.role == "tool"]
        assert tools == ["tools"], logs  # the tool step ran on the tools pool, the turns on default
    finally:
        for worker in workers:
            worker.stop(timeout=10)
