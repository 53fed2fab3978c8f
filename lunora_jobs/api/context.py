"""What every route needs: the ``Lunora`` app, the gatekeeper and the live hub of this process."""

from __future__ import annotations

from dataclasses import dataclass

from lunora_jobs.api.costs import Estimator, reported_only
from lunora_jobs.api.live.hub import LiveHub
from lunora_jobs.api.security import Gatekeeper
from lunora_jobs.runtime import Lunora
from lunora_jobs.store.base import AgentStore


@dataclass(frozen=True)
class ApiContext:
    """Shared by the routers of one API app."""

    lunora: Lunora
    gate: Gatekeeper
    hub: LiveHub
    heartbeat_s: float = 15.0
    poll_s: float = 15.0
    """How often an idle stream re-reads the database, in case a pub/sub notice was lost."""
    estimate_cost: Estimator = reported_only
    """Prices usage the provider did not: the runs list's cost column."""

    @property
    def store(self) -> AgentStore:
        """The app's store."""
        return self.lunora.store
