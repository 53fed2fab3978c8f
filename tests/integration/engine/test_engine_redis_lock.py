"""RedisLock on the real server: exclusion per run, expiry, and carrying on when Redis is gone."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from lunora_jobs.engine.keys import run_lock_key
from lunora_jobs.engine.locks import RedisLock

pytestmark = pytest.mark.integration


def test_one_holder_per_run_and_the_key_is_gone_after(redis_url: str, redis_prefix: str) -> None:
    lock = RedisLock.from_url(redis_url, prefix=redis_prefix)
    client: redis.Redis = lock.client
    key = run_lock_key(redis_prefix, "run-1")
    try:
        with lock.hold("run-1", ttl_ms=5_000, wait_s=1.0) as held:
            assert held and client.exists(key) == 1
            assert 0 < client.pttl(key) <= 5_000
            with lock.hold("run-1", ttl_ms=5_000, wait_s=0.2) as second:
                assert second is False  # contended: the caller carries on without it
            with lock.hold("run-2", ttl_ms=5_000, wait_s=0.2) as other:
                assert other is True  # other runs are independent
        assert client.exists(key) == 0
    finally:
        client.delete(key, run_lock_key(redis_prefix, "run-2"))
        client.close()


def test_a_dead_holder_s_lock_expires(redis_url: str, redis_prefix: str) -> None:
    lock = RedisLock.from_url(redis_url, prefix=redis_prefix)
    client: redis.Redis = lock.client
    key = run_lock_key(redis_prefix, "run-x")
    try:
        client.set(key, "dead-worker-token", px=200)  # a holder that died without releasing
        with lock.hold("run-x", ttl_ms=5_000, wait_s=2.0) as held:
            assert held
        assert client.exists(key) == 0
    finally:
        client.delete(key)
        client.close()


def test_waiters_are_served_in_turn(redis_url: str, redis_prefix: str) -> None:
    lock = RedisLock.from_url(redis_url, prefix=redis_prefix)
    inside: list[int] = []
    overlaps: list[bool] = []
    guard = threading.Lock()

    def worker(i: int) -> None:
        with lock.hold("shared", ttl_ms=5_000, wait_s=5.0) as held:
            assert held
            with guard:
                overlaps.append(bool(inside))
                inside.append(i)
            time.sleep(0.01)
            with guard:
                inside.remove(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert overlaps == [False] * 6
    lock.client.close()


def test_redis_down_means_no_lock_not_an_error(redis_prefix: str) -> None:
    lock = RedisLock.from_url("redis://127.0.0.1:1/0", prefix=redis_prefix)  # nothing listens on port 1
    with lock.hold("run-1", ttl_ms=1_000, wait_s=0.1) as held:
        assert held is False
