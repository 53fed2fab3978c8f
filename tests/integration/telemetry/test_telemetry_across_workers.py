"""One run is one trace across two real worker processes: spans exported over OTLP/HTTP by the
workers (``LUNORA_OTEL_EXPORTER=otlp``) to a loopback receiver, the run's start span collected in
this process with the SDK's in-memory exporter."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_receiver import OtlpReceiver
from private_redis import PrivateRedis

from workers.testing import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver.start() as server:
        yield server


def test_a_run_across_two_worker_processes_is_one_trace(
    pg_url: str, private_redis: PrivateRedis, receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch,
) -> None:
    prefix = "traced-" + uuid.uuid4().hex[:8]
    env = {
        "CELERY_BROKER_URL": private_redis.url(1), "LUNORA_QUEUE": f"{prefix}-q",
        "LUNORA_DATABASE_URL": pg_url, "LUNORA_REDIS_URL": private_redis.url(0),
        "LUNORA_APP": "traced_app:build_app", "TRACED_REDIS_URL": private_redis.url(0),
        "TRACED_PREFIX": prefix,
        "LUNORA_OTEL_EXPORTER": "otlp", "LUNORA_OTEL_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # the SDK's batch delay (ms), read by the SDK itself
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    for name, value in env.items():
        if not name.startswith(("LUNORA_OTEL", "OTEL_")):
            monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(HERE))
    import traced_app

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    app = traced_app.build_app(provider)
    app.store.ensure_tables()
    workers = [
        WorkerProcess(env["LUNORA_QUEUE"], {**env, "LUNORA_OTEL_SERVICE_NAME": f"worker-{n}"},
                      concurrency=1, name=f"{prefix}-{n}")
        for n in ("a", "b")
    ]
    try:
        for worker in workers:
            worker.start()
        handle = app.agents.traced.run(input=traced_app.PROMPT, thread_key=f"{prefix}-t")
        deadline = time.monotonic() + 60
        while (run := app.store.get_run(handle.id)) is None or run.status not in ("completed", "failed"):
            assert time.monotonic() < deadline, [w.log()[-3000:] for w in workers]
            time.sleep(0.1)
        assert run.status == "completed", [w.log()[-3000:] for w in workers]

        (start,) = memory.get_finished_spans()
        trace_id = f"{start.context.trace_id:032x}"
        root_id = f"{start.context.span_id:016x}"
        assert start.name == "invoke_agent traced" and start.attributes["lunora.run_id"] == handle.id

        def complete(spans: list[dict[str, Any]]) -> bool:
            return len([s for s in spans if s["trace_id"] == trace_id]) >= 5

        spans = [s for s in receiver.wait_for(complete, timeout=30) if s["trace_id"] == trace_id]
    finally:
        for worker in workers:
            worker.stop(timeout=10)
        provider.shutdown()
        private_redis.client(0).delete(f"{prefix}:entered")
        private_redis.client(1).delete(env["LUNORA_QUEUE"])

    names = sorted(s["name"] for s in spans)
    assert names == ["chat scripted", "chat scripted", "execute_tool pair", "execute_tool pair",
                     "lunora.run traced"], names
    assert all(s["parent_span_id"] == root_id for s in spans), spans  # every step under the run's span
    tools = [s for s in spans if s["name"] == "execute_tool pair"]
    assert {s["service"] for s in tools} == {"worker-a", "worker-b"}  # the pair ran in both workers
    assert {s["attributes"]["gen_ai.tool.call.id"] for s in tools} == {"p1", "p2"}
    turn0 = next(s for s in spans if s["attributes"].get("lunora.step") == "llm:turn:0")
    assert turn0["attributes"]["gen_ai.usage.input_tokens"] == 12
    assert turn0["attributes"]["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert "PRIVATE-PROMPT" not in json.dumps(spans)  # privacy-safe by default
