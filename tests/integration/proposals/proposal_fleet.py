"""``ProposalFleet``: workers and beat on a private Redis db over a fresh PostgreSQL database, running
``proposal_app`` with a short proposal lease and a one-second beat tick."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
