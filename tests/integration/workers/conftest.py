"""The ``fleet`` fixture of the worker tests: a ``Fleet`` on PostgreSQL and the private Redis."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fleet_support import Fleet
from private_redis import PrivateRedis


@pytest.fixture
def fleet(pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fleet]:
    """A fleet with no worker yet (``fleet.start_worker()``), closed after the test."""
    fleet = Fleet(pg_url, private_redis, monkeypatch)
    try:
        yield fleet
    finally:
        fleet.close()
