"""The ``fleet`` fixture: a ``ProposalFleet`` over this test's own database and Redis db."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from private_redis import PrivateRedis
from proposal_fleet import ProposalFleet


@pytest.fixture
def fleet(pg_url: str, private_redis: PrivateRedis, monkeypatch: Any) -> Iterator[ProposalFleet]:
    """A fleet over this test's own database; every process it started is stopped afterwards."""
    fleet = ProposalFleet(pg_url, private_redis.url(3), monkeypatch)
    try:
        yield fleet
    finally:
        fleet.close()
