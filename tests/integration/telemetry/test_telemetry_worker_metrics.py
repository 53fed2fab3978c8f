"""Prometheus metrics from a prefork worker, scraped over HTTP: the sum of its pool processes."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import httpx
import pytest
from ports import free_port
from private_redis import PrivateRedis
from prometheus_client.parser import text_string_to_metric_families

from workers.testing import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text) for sample in family.samples
    }


def test_a_prefork_worker_serves_the_sum_of_its_pool_processes(
    pg_url: str, private_redis: PrivateRedis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    prefix = "metrics-" + uuid.uuid4().hex[:8]
    port = free_port()
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
    worker = WorkerProcess(env["LUNORA_QUEUE"], {
        **env, "LUNORA_METRICS_PORT": str(port), "LUNORA_METRICS_ADDRESS": "127.0.0.1",
        # As a deployment running `celery -A workers worker` sets it (`lunora worker` sets it itself).
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom"),
    }, concurrency=2, name=prefix)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        worker.start()
        handle = app.agents.traced.run(input="go", thread_key=f"{prefix}-t")
        deadline = time.monotonic() + 60
        while (run := app.store.get_run(handle.id)) is None or run.status not in ("completed", "failed"):
            assert time.monotonic() < deadline, worker.log()[-3000:]
            time.sleep(0.1)
        assert run.status == "completed", worker.log()[-3000:]
        # The pair of tool calls waited for each other: they ran in the pool's two processes at once.
        messages = app.store.list_messages(run.thread_id)
        pids = {str(m.content).rsplit(" ", 1)[1] for m in messages if m.role == "tool"}
        assert len(pids) == 2, pids

        def scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
            return _samples(httpx.get(url, timeout=10).text)

        deadline = time.monotonic() + 20
        finished = ("lunora_runs_finished_total", (("agent", "traced"), ("status", "completed")))
        while (samples := scrape()).get(finished) != 1:
            assert time.monotonic() < deadline, (samples, worker.log()[-3000:])
            time.sleep(0.2)
    finally:
        worker.stop(timeout=10)
        private_redis.client(0).delete(f"{prefix}:entered")
        private_redis.client(1).delete(env["LUNORA_QUEUE"])

    assert samples[("lunora_steps_total", (("kind", "tool"), ("status", "completed")))] == 2
    assert samples[("lunora_steps_total", (("kind", "turn"), ("status", "completed")))] == 2
    assert samples[("lunora_step_duration_seconds_count", (("kind", "tool"),))] == 2
    assert samples[("lunora_step_attempts_total", (("kind", "turn"),))] == 2
    assert samples[("lunora_runs_started_total", (("agent", "traced"),))] == 1
    tokens = ("lunora_tokens_total", (("agent", "traced"), ("direction", "input"), ("model", "scripted")))
    assert samples[tokens] == 42
    assert samples[("lunora_queue_depth", (("queue", env["LUNORA_QUEUE"]),))] == 0
    assert samples[("lunora_runs_awaiting_approval", ())] == 0


def test_metrics_refuse_to_start_when_prometheus_client_cannot_be_summed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import prometheus_client  # noqa: F401  (imported first, as Flower's Celery plugin does)

    from lunora_jobs.config import Settings
    from lunora_jobs.errors import ConfigurationError
    from workers.metrics import start_metrics

    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    with pytest.raises(ConfigurationError, match="PROMETHEUS_MULTIPROC_DIR"):
        start_metrics(Settings(metrics_port=free_port()), None, ["q"])
