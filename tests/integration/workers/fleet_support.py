"""A small worker fleet for tests: real ``celery worker`` processes, a real broker, a real store.

Each ``Fleet`` runs on the test's private Redis (the ``private_redis`` fixture: a
``redis-server`` of its own, so a test may flush the broker or read Celery's db-wide ``unacked``
keys without touching anybody's data): db 1 is the broker, db 0 holds the tools' counters and the
run/sweep locks under the fleet's key prefix. A fleet also owns a private queue and a fresh
PostgreSQL database. ``close()`` kills every worker it started and removes the keys it created.
"""

from __future__ import annotations

import importlib
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from private_redis import PrivateRedis

from workers.testing import BeatProcess, WorkerProcess

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BROKER_DB, COUNTER_DB = 1, 0
TERMINAL = ("completed", "failed", "cancelled")


class Fleet:
    """Workers + the test process's own ``Lunora`` app on the same broker, queue and database.

    Everything it touches is namespaced (queue, Redis key prefix, database), so several fleets of a
    session can share the private Redis.
    """

    def __init__(
        self, database_url: str, redis: PrivateRedis, monkeypatch: Any, *, broker_url: str | None = None
    ) -> None:
        self.prefix = "fleet-" + uuid.uuid4().hex[:8]
        self.queue = self.prefix + "-q"
        # ``broker_url`` (e.g. RabbitMQ) replaces the Redis broker db; the lock stays on Redis.
        self.broker_url = broker_url or redis.url(BROKER_DB)
        self.redis_broker = broker_url is None
        self.env = {
            "CELERY_BROKER_URL": self.broker_url,
            "LUNORA_QUEUE": self.queue,
            "LUNORA_DATABASE_URL": database_url,
            "LUNORA_REDIS_URL": redis.url(COUNTER_DB),
            "LUNORA_APP": "fleet_app:build_app",
            "FLEET_REDIS_URL": redis.url(COUNTER_DB),
            "FLEET_PREFIX": self.prefix,
            # The sweep's grace (engine default 30 s) and beat's tick, scaled down to test time.
            "LUNORA_SWEEP_GRACE_MS": "1000",
            "LUNORA_SWEEP_INTERVAL": "0.5",
            # A killed worker's step is taken over 2 s after its last lease renewal (default 6 s).
            "LUNORA_LEASE_S": "2",
            "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.syspath_prepend(str(HERE))
        self.broker = redis.client(BROKER_DB)
        self.counters = redis.client(COUNTER_DB, decode_responses=True)
        import fleet_app

        self.app = fleet_app.build_app()
        self.app.store.ensure_tables()
        self.workers: list[WorkerProcess] = []
        self.sweep_grace_ms = int(self.env["LUNORA_SWEEP_GRACE_MS"])
        """The sweep leaves runs with ledger activity this recent alone (the engine default is 30 s)."""

    # -- processes ------------------------------------------------------------------------------
    def start_worker(
        self, concurrency: int = 2, loglevel: str = "WARNING", pool: str = "prefork"
    ) -> WorkerProcess:
        """Start one more worker on the fleet's queue (``pool``: Celery's ``--pool``) and wait until
        it consumes."""
        name = f"{self.prefix}-{len(self.workers)}"
        worker = WorkerProcess(self.queue, self.env, concurrency=concurrency, name=name, loglevel=loglevel,
                               pool=pool)
        self.workers.append(worker)
        return worker.start()

    def start_beat(self, heartbeat_file: Path | None = None) -> BeatProcess:
        """Start ``celery beat`` ticking the sweep every ``LUNORA_SWEEP_INTERVAL`` (0.5 s here); it
        touches ``heartbeat_file`` on every tick (the first touch: beat is up and ticking)."""
        env = dict(self.env)
        if heartbeat_file is not None:
            env["LUNORA_HEARTBEAT_FILE"] = str(heartbeat_file)
        beat = BeatProcess(self.queue, env, name=f"{self.prefix}-beat")
        self.workers.append(beat)
        return beat.start()

    def close(self) -> None:
        """Kill every worker, then remove the broker data and counter keys this fleet created."""
        for worker in self.workers:
            worker.stop(timeout=5)
        self.drop_broker_keys()
        if not self.redis_broker:
            kombu: Any = importlib.import_module("kombu")  # untyped library

            with kombu.Connection(self.broker_url) as conn:
                kombu.Queue(self.queue, channel=conn.default_channel).delete()
        keys = list(self.counters.scan_iter(f"{self.prefix}:*"))
        if keys:
            self.counters.delete(*keys)

    def explain(self, run_id: str) -> str:
        """The run, its ledger, the tools' counters and the workers' logs (for assertion messages)."""
        rows = self.app.store.list_steps(run_id)
        steps = [(s.name, s.status, s.attempt, s.lease_owner, s.error) for s in rows]
        return (f"run={self.app.store.get_run(run_id)}\nsteps={steps}\nexecutions={self.executions()}\n"
                f"applied={self.applied()}\n{self.logs()}")

    def drop_broker_keys(self) -> None:
        """Remove this fleet's queue and its unacknowledged copies from the Redis broker db — never
        the whole db: another session may be running a fleet on the same db right now."""
        queue = self.queue.encode()
        bindings = (f"_kombu.binding.{self.queue}", f"_kombu.binding_permanent.{self.queue}")
        self.broker.delete(self.queue, *bindings)
        for tag, payload in self.broker.hscan_iter("unacked"):
            if queue in payload:
                self.broker.hdel("unacked", tag)
                self.broker.zrem("unacked_index", tag)

    def logs(self) -> str:
        """Every worker's output, for assertion messages."""
        return "\n".join(f"--- worker {w.name}\n{w.log()[-4000:]}" for w in self.workers)

    # -- runs -----------------------------------------------------------------------------------
    def start_run(self, agent: str, thread_key: str | None = None) -> str:
        """Start a run of ``agent`` on a fresh thread; return the run id."""
        client = getattr(self.app.agents, agent)
        key = thread_key or f"{self.prefix}-{uuid.uuid4().hex[:6]}"
        return str(client.run(input="go", thread_key=key).id)

    def wait_run(self, run_id: str, timeout: float = 60.0, tick: Callable[[], None] | None = None) -> Any:
        """Poll the store until the run is terminal (calling ``tick`` between polls); return it."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.app.store.get_run(run_id)
            if run is not None and run.status in TERMINAL:
                return run
            if time.monotonic() > deadline:
                steps = [(s.name, s.status, s.attempt) for s in self.app.store.list_steps(run_id)]
                raise AssertionError(f"run {run_id} not finished: {run}\nsteps={steps}\n{self.logs()}")
            if tick is not None:
                tick()
            time.sleep(0.1)

    def send_sweep(self) -> None:
        """Enqueue the ``lunora.sweep`` task, as beat's tick does."""
        from workers.dispatch import CeleryDispatcher

        dispatcher = CeleryDispatcher(self.broker_url, self.queue)
        dispatcher.app.send_task(
            "lunora.sweep", kwargs={"grace_ms": self.sweep_grace_ms}, queue=self.queue, ignore_result=True
        )

    @contextmanager
    def sweeping(self, every: float = 0.5) -> Iterator[Callable[[], None]]:
        """A ``tick`` for ``wait_run`` that sends the sweep task at most every ``every`` seconds."""
        last = [0.0]

        def tick() -> None:
            if time.monotonic() - last[0] >= every:
                last[0] = time.monotonic()
                self.send_sweep()

        yield tick

    # -- the tools' durable counters ------------------------------------------------------------
    def executions(self) -> dict[str, int]:
        """idempotency_key -> executions (every attempt)."""
        return {str(k): int(v) for k, v in self.counters.hgetall(f"{self.prefix}:exec").items()}

    def applied(self) -> dict[str, int]:
        """idempotency_key -> times the side effect was applied (must be 1 each)."""
        return {str(k): int(v) for k, v in self.counters.hgetall(f"{self.prefix}:applied").items()}

    def wait_entered(self, count: int = 1, timeout: float = 30.0) -> list[str]:
        """Wait until ``count`` blocking tool executions have started; return their step names."""
        deadline = time.monotonic() + timeout
        while True:
            entered = self.counters.lrange(f"{self.prefix}:entered", 0, -1)
            if len(entered) >= count:
                return [str(name) for name in entered]
            if time.monotonic() > deadline:
                raise AssertionError(f"blocking tool not entered ({entered})\n{self.logs()}")
            time.sleep(0.02)

    def pid_of(self, idempotency_key: str) -> int:
        """The process that last executed the blocking tool with this key."""
        return int(self.counters.hget(f"{self.prefix}:pids", idempotency_key) or 0)

    def release(self) -> None:
        """Let every blocking tool execution (current or future) proceed."""
        self.counters.set(f"{self.prefix}:release", "1")


def assert_clean_transcript(messages: list[Any], *, tool_messages: int, assistant_messages: int) -> None:
    """No duplicated message, ``seq`` strictly increasing, and the expected count per role."""
    keys = [m.key for m in messages]
    assert len(keys) == len(set(keys)), f"duplicated message keys: {keys}"
    seqs = [m.seq for m in messages]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), f"transcript out of order: {seqs}"
    roles = Counter(m.role for m in messages)
    assert roles["user"] == 1, roles
    assert roles["assistant"] == assistant_messages, roles
    assert roles["tool"] == tool_messages, roles
    # Every tool result answers a call made by an earlier assistant message.
    called: set[str] = set()
    for m in messages:
        if m.role == "assistant":
            called.update(c["id"] for c in (m.tool_calls or []))
        if m.role == "tool":
            assert m.tool_call_id in called, f"tool result {m.key} precedes its call"
