"""The ``fleet`` fixture: a private Redis db, a fresh PostgreSQL database, workers and beat on demand,
running ``proposal_app`` with a short proposal lease and a one-second beat tick."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from private_redis import PrivateRedis
from worker_fleet import WorkerFleet, unique_prefix

HERE = Path(__file__).resolve().parent
LEASE_MS = 2_000


class ProposalFleet(WorkerFleet):
    """The fleet of the independent-approval tests (see ``proposal_app``)."""

    def __init__(self, database_url: str, redis_url: str, monkeypatch: Any) -> None:
        prefix = unique_prefix("prop")
        super().__init__(database_url, redis_url, monkeypatch, app_module="proposal_app", here=HERE,
                         prefix=prefix, env={
                             "LUNORA_PROPOSAL_LEASE_MS": str(LEASE_MS), "LUNORA_SWEEP_INTERVAL": "1",
                             "PROP_REDIS_URL": redis_url, "PROP_PREFIX": prefix,
                         })


@pytest.fixture
def fleet(pg_url: str, private_redis: PrivateRedis, monkeypatch: Any) -> Iterator[ProposalFleet]:
    """A fleet over this test's own database; every process it started is stopped afterwards."""
    fleet = ProposalFleet(pg_url, private_redis.url(3), monkeypatch)
    try:
        yield fleet
    finally:
        fleet.close()
