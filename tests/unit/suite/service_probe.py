"""Tests that need a service, run by ``test_service_guard.py`` in a child pytest (not collected here:
the file name does not start with ``test_``), with the service's address pointed at nothing."""

from __future__ import annotations

from private_redis import PrivateRedis


def test_needs_postgres(pg_url: str) -> None:
    assert pg_url


def test_needs_shared_redis(redis_url: str) -> None:
    assert redis_url


def test_needs_private_redis(private_redis: PrivateRedis) -> None:
    assert private_redis.port
