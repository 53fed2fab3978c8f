"""Benchmark: requests per second through ``lunora ingress`` into the broker, and the time from a
request to its run's first step starting.

    python bench/ingress.py [--clients 8] [--seconds 5] [--latency-requests 50]

It starts real processes on loopback: ``lunora ingress`` (uvicorn, one process) on a fresh PostgreSQL
database and a private queue on Redis db 15, and measures, with ``--clients`` client threads each
sending back-to-back for ``--seconds``:

1. **refused** — unsigned requests (401): the HTTP floor (uvicorn, body read, channel detection);
2. **verified + enqueued** — Slack events, each signed and new: verification, the mapper, the dedupe
   claim in ``agent_inbound``, the run's rows and its first step published to the broker (no worker
   runs meanwhile: the broker only fills up); every 200 is checked against the runs in the database;
3. **retries** — the same signed event again and again (Slack's retries): verified, found in the
   dedupe ledger, nothing started.

It prints requests per second and each one's ratio to the floor. Then, with a Celery worker on a
second ingress's queue, it sends ``--latency-requests`` events one by one and prints the p50/p99 time
from sending the request to the first step's ledger claim (``llm:turn:0`` created, in the worker).
The machine may be shared: figures are one sample each, measured in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = Path(__file__).resolve().parent
PG_ADMIN = os.environ.get("LUNORA_BENCH_PG_ADMIN", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
REDIS_BASE = os.environ.get("LUNORA_BENCH_REDIS", "redis://127.0.0.1:6379")
REDIS_DB = 15
SECRET = "bench-signing-secret"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _signed(event_id: str, text: str = "hello") -> tuple[bytes, dict[str, str]]:
    body = json.dumps({"type": "event_callback", "team_id": "T1", "event_id": event_id, "event": {
        "type": "app_mention", "user": "U1", "text": text, "channel": "C1", "ts": event_id}}).encode()
    ts = str(int(time.time()))
    signature = "v0=" + hmac.new(SECRET.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    return body, {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature,
                  "Content-Type": "application/json"}


class _Process:
    """A child process in its own group, its output in a temporary log."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.log = Path(tempfile.mkdtemp(prefix="lunora-bench-")) / "out.log"
        self._out = self.log.open("ab")
        self.proc = subprocess.Popen(command, env=env, stdout=self._out, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def wait_until(self, ready: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start:\n{self.log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self._out.close()


def _ingress(env: dict[str, str]) -> tuple[_Process, str]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    process = _Process([sys.executable, "-m", "lunora_jobs.cli", "ingress", "--port", str(port),
                        "--log-level", "warning"], env)

    def healthy() -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(url + "/healthz", timeout=1).status_code == 200
        return False

    process.wait_until(healthy, "lunora ingress")
    return process, url


Request = Callable[[int, int], tuple[bytes, dict[str, str]]]


def _load(url: str, clients: int, seconds: float, request: Request, expect: int) -> tuple[float, int]:
    """``clients`` threads send ``request(client, n)`` back to back for ``seconds``; requests/s."""
    counts = [0] * clients
    wrong: list[int] = []
    stop = time.monotonic() + seconds

    def client(index: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as http:
            n = 0
            while time.monotonic() < stop:
                body, headers = request(index, n)
                status = http.post("/slack/events", content=body, headers=headers).status_code
                if status != expect:
                    wrong.append(status)
                n += 1
            counts[index] = n

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if wrong:
        raise RuntimeError(f"{len(wrong)} answers were not {expect}: {sorted(set(wrong))}")
    return sum(counts) / (time.monotonic() - started), sum(counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--latency-requests", type=int, default=50)
    args = parser.parse_args()

    import redis
    import sqlalchemy as sa

    sys.path[:0] = [str(ROOT), str(BENCH_DIR)]
    from workers.testing import WorkerProcess

    name = "lunora_bench_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    database_url = f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}"
    broker_url = f"{REDIS_BASE}/{REDIS_DB}"
    prefix = "bench-ingress-" + uuid.uuid4().hex[:6]
    base_env = {**os.environ, "LUNORA_APP": "_ingress_app:build_app", "LUNORA_DATABASE_URL": database_url,
                "CELERY_BROKER_URL": broker_url, "BENCH_SLACK_SECRET": SECRET,
                "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH_DIR), os.environ.get("PYTHONPATH", "")])}
    broker = redis.Redis.from_url(broker_url)
    processes: list[Any] = []
    queues = [f"{prefix}-load", f"{prefix}-latency"]
    try:
        ingress, url = _ingress({**base_env, "LUNORA_QUEUE": queues[0]})
        processes.append(ingress)
        _load(url, 1, 0.5, lambda c, n: _signed(f"warm-{n}"), 200)  # connections, pools, the tables

        floor, _ = _load(url, args.clients, args.seconds, lambda c, n: (b"{}", {}), 401)
        run_tag = uuid.uuid4().hex[:6]
        verified, sent = _load(url, args.clients, args.seconds,
                               lambda c, n: _signed(f"ev-{run_tag}-{c}-{n}"), 200)
        retry_body = _signed("ev-retried")
        retries, _ = _load(url, args.clients, args.seconds, lambda c, n: retry_body, 200)

        from lunora_jobs.store.sql import create_store

        store = create_store(database_url)
        runs = store.list_runs(limit=100_000)
        started = sum(1 for r in runs if run_tag in json.dumps(r.input))
        queued = int(broker.llen(queues[0]))  # every run's first step, the warm-up's too
        print(f"ingress, {args.clients} clients x {args.seconds:.0f} s, one uvicorn process "
              f"(PostgreSQL, Redis broker)")
        print(f"  {'refused (401, unsigned)':34s} {floor:8.0f} req/s   1.00x")
        print(f"  {'verified + enqueued (200, new)':34s} {verified:8.0f} req/s   "
              f"{verified / floor:.2f}x of refused")
        print(f"  {'retries (200, deduped)':34s} {retries:8.0f} req/s   {retries / floor:.2f}x of refused")
        print(f"  runs started for the {sent} new events: {started}; runs in the database (with the "
              f"warm-up): {len(runs)}; first steps in the broker: {queued}")

        latency_ingress, latency_url = _ingress({**base_env, "LUNORA_QUEUE": queues[1]})
        processes.append(latency_ingress)
        worker = WorkerProcess(queues[1], {k: v for k, v in base_env.items() if k != "LUNORA_QUEUE"},
                               concurrency=2, name=f"{prefix}-worker")
        processes.append(worker)
        worker.start()
        from channels.ledger import delivery_key
        from lunora_jobs.store.schema import inbound

        sent_at: dict[str, float] = {}
        with httpx.Client(base_url=latency_url, timeout=30) as http:
            for n in range(args.latency_requests):
                event_id = f"lat-{run_tag}-{n}"
                body, headers = _signed(event_id)
                sent_at[event_id] = time.time() * 1000.0
                assert http.post("/slack/events", content=body, headers=headers).status_code == 200
                time.sleep(0.05)
        latencies: list[float] = []
        deadline = time.monotonic() + 60
        for event_id, at in sent_at.items():
            key = delivery_key(f"slack:T1:{event_id}")
            with store.engine.connect() as conn:
                run_id = conn.execute(sa.select(inbound.c.run_id).where(inbound.c.key == key)).scalar_one()
            while (step := store.get_step(run_id, "llm:turn:0")) is None:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"run {run_id} never started its first step")
                time.sleep(0.05)
            latencies.append(step.created_at - at)
        latencies.sort()
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        print(f"request -> first step claimed by a worker ({len(latencies)} requests, one at a time): "
              f"p50 {statistics.median(latencies):.1f} ms, p99 {p99:.1f} ms")
        store.close()
    finally:
        for process in processes:
            process.stop()
        broker.delete(*queues, *(f"_kombu.binding{kind}.{q}" for q in queues for kind in ("", "_permanent")))
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()
