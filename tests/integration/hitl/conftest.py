"""The ``fleet`` fixture: a private Redis, a fresh PostgreSQL database, workers started on demand."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hitl_fleet import HitlFleet
from private_redis import PrivateRedis


@pytest.fixture
def fleet(pg_url: str, private_redis: PrivateRedis, monkeypatch: Any) -> Iterator[HitlFleet]:
    """A fleet over this test's own database; every worker it started is stopped afterwards."""
    fleet = HitlFleet(pg_url, private_redis.url(2), monkeypatch)
    try:
        yield fleet
    finally:
        fleet.close()
