"""The worker tests' fixtures: a ``Fleet`` on PostgreSQL and the private Redis, a queue on the shared one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from fleet_support import Fleet
from private_redis import PrivateRedis
from suite_settings import settings


@pytest.fixture
def fleet(pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fleet]:
    """A fleet with no worker yet (``fleet.start_worker()``), closed after the test."""
    fleet = Fleet(pg_url, private_redis, monkeypatch)
    try:
        yield fleet
    finally:
        fleet.close()


@pytest.fixture
def queue(redis_prefix: str) -> Iterator[str]:
    """A queue name of this test's own on the shared Redis; the queue and its bindings go afterwards."""
    name = f"{redis_prefix}-binding"
    yield name
    client = redis.Redis.from_url(settings.redis_url)
    client.delete(name, f"_kombu.binding.{name}", f"_kombu.binding_permanent.{name}")
    client.close()
