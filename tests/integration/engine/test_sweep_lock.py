"""The sweep holds the sweep lock (Redis) for a whole pass, and examines a bounded, stalest-first batch.

Two overlapping passes (two beats by mistake, a slow pass overlapping the next tick): the second
returns at once with ``skipped`` and scans nothing. With Redis unreachable the sweep still scans:
it is the recovery path for lost broker messages, and the ledger dedupes without the lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from engine_it_support import RecordingDispatcher, weather_agent, weather_stub

from lunora_jobs import Lunora, ScriptedModel, final_turn
from lunora_jobs.engine.keys import run_lock_key
from lunora_jobs.engine.locks import LocalLock, RedisLock
from lunora_jobs.engine.sweep import sweep_lock_id
from lunora_jobs.store import create_store
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import StepRecord

pytestmark = pytest.mark.integration


class PausingStore:
    """The real store; the first query of the first pass waits until the test lets it go (to overlap two)."""

    def __init__(self, inner: AgentStore) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self.release = threading.Event()

    def lapsed_steps(self, *args: Any, **kwargs: Any) -> list[StepRecord]:
        if not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(timeout=10)
        return self.inner.lapsed_steps(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def app_parts(pg_url: str, redis_url: str, redis_prefix: str) -> Iterator[tuple[PausingStore, RedisLock]]:
    store = PausingStore(create_store(pg_url))
    lock = RedisLock.from_url(redis_url, prefix=redis_prefix)
    yield store, lock
    for key in lock.client.scan_iter(run_lock_key(redis_prefix, "*")):
        lock.client.delete(key)
    lock.client.close()
    store.inner.close()  # type: ignore[attr-defined]


def _app(store: Any, lock: Any, dispatcher: RecordingDispatcher) -> Lunora:
    return Lunora([weather_agent()], store=store, dispatcher=dispatcher, lock=lock,
                  model=ScriptedModel([final_turn("ok")] * 10), functions={"weather:lookup": weather_stub})


def test_two_overlapping_sweeps_scan_once(app_parts: tuple[PausingStore, RedisLock]) -> None:
    store, lock = app_parts
    dispatcher = RecordingDispatcher()
    app = _app(store, lock, dispatcher)
    handles = [app.agents.support.run(input="hi", thread_key=f"t{i}") for i in range(3)]
    dispatcher.tasks.clear()  # the start messages are "lost": only the sweep can move these runs
    reports: list[Any] = []
    first = threading.Thread(target=lambda: reports.append(app.sweep(grace_ms=0)))
    first.start()
    try:
        assert store.entered.wait(timeout=10)  # the first pass holds the lock, mid-scan
        second = app.sweep(grace_ms=0)
    finally:
        store.release.set()
        first.join(timeout=30)
    assert second.skipped and second.scanned == 0 and second.dispatched == []
    (report,) = reports
    assert not report.skipped and report.scanned == 3
    assert sorted(t.run_id for t in report.dispatched) == sorted(h.id for h in handles)
    assert sorted(t.run_id for t in dispatcher.tasks) == sorted(h.id for h in handles)  # once each
    # The lock was released with the pass: the next tick scans again.
    store.entered.set()
    assert not app.sweep(grace_ms=0).skipped


def test_sweep_runs_without_redis(app_parts: tuple[PausingStore, RedisLock]) -> None:
    store, _ = app_parts
    store.entered.set()  # no pausing here
    dead = RedisLock(redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2), prefix="dead")
    dispatcher = RecordingDispatcher()
    app = _app(store, dead, dispatcher)
    handle = app.agents.support.run(input="hi", thread_key="t")
    dispatcher.tasks.clear()
    report = app.sweep(grace_ms=0)
    assert not report.skipped and [t.run_id for t in report.dispatched] == [handle.id]


def test_sweep_examines_a_bounded_stalest_first_batch_and_never_starves(
    app_parts: tuple[PausingStore, RedisLock],
) -> None:
    store, lock = app_parts
    store.entered.set()
    dispatcher = RecordingDispatcher()
    app = _app(store, lock, dispatcher)
    handles = [app.agents.support.run(input="hi", thread_key=f"t{i}") for i in range(4)]
    dispatcher.tasks.clear()
    stalest = [r.id for r in store.inner.quiet_runs("running", app.deps.now(), agents=["support"], limit=4)]
    assert sorted(stalest) == sorted(h.id for h in handles)
    report = app.sweep(batch=1, budget=2, grace_ms=0)  # keyset pages of one, two runs a pass
    assert report.scanned == 2 and [t.run_id for t in report.dispatched] == stalest[:2]
    # The runs it examined were touched: the next pass starts with the two it did not reach.
    report = app.sweep(batch=1, budget=2, grace_ms=0)
    assert [t.run_id for t in report.dispatched] == stalest[2:]


def test_the_sweep_lock_is_per_database(app_parts: tuple[PausingStore, RedisLock], pg_url: str) -> None:
    """Apps on two databases sharing one Redis and prefix: a pass on one never skips the other's."""
    store, lock = app_parts
    store.entered.set()
    app = _app(store, lock, RecordingDispatcher())
    other = create_store(pg_url.rsplit("/", 1)[0] + "/postgres")
    try:
        other_app = _app(other, lock, RecordingDispatcher())
        assert sweep_lock_id(app.deps) != sweep_lock_id(other_app.deps)
        with lock.hold(sweep_lock_id(other_app.deps), ttl_ms=10_000, wait_s=0) as held:
            assert held
            assert not app.sweep(grace_ms=0).skipped
            assert other_app.sweep(grace_ms=0).skipped
    finally:
        other.close()  # type: ignore[attr-defined]


def test_the_in_memory_twin_bounds_the_sweep_the_same_way() -> None:
    from lunora_jobs.store import InMemoryStore

    app = _app(InMemoryStore(), LocalLock(), RecordingDispatcher())
    for i in range(3):
        app.agents.support.run(input="hi", thread_key=f"t{i}")
    every = [r.id for r in app.store.list_runs(status="running")]
    assert len(every) == 3
    assert [r.id for r in app.store.list_runs(status="running", limit=2)] == every[:2]
    assert app.store.list_runs(status="running", limit=0) == []
    assert app.sweep(batch=1, budget=2, grace_ms=0).scanned == 2
    assert app.sweep(batch=1, budget=2, grace_ms=0).scanned == 2
