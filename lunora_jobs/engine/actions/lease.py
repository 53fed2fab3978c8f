"""Keeping a proposal's execution lease alive while its tool runs: a daemon thread renews it every
third of its length, so a slow but live execution is never taken over, while a killed worker's
lease runs out within one lease length and another worker recovers the proposal."""

from __future__ import annotations

import threading
from types import TracebackType

from lunora_jobs.store.proposals import ActionProposalStore, ProposalLease


class LeaseKeeper:
    """``with LeaseKeeper(store, lease, lease_ms) as keeper: ...``; ``keeper.lost`` once renewal failed."""

    def __init__(self, store: ActionProposalStore, lease: ProposalLease, lease_ms: int) -> None:
        self._store, self._lease, self._lease_ms = store, lease, lease_ms
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease:{lease.proposal.id}", daemon=True)
        self.lost = False

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        proposal = self._lease.proposal
        while not self._stop.wait(self._lease_ms / 3000):
            renewed = self._store.renew_action_proposal_lease(
                proposal.scope, proposal.id, self._lease.token, self._lease.generation,
                lease_ms=self._lease_ms,
            )
            if renewed.outcome != "renewed":
                self.lost = True  # another worker may hold it now; our settle will be refused
                return
