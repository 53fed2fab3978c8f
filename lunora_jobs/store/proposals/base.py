"""The ``ActionProposalStore`` capability: proposal storage for independent approvals.

Both ``SqlStore`` (``lunora_jobs.store.sql``) and ``InMemoryStore`` (``lunora_jobs.store.memory``)
implement it beside ``AgentStore``; the rules they share live in ``_validation`` (what a caller may
hand in) and ``_state_machine`` (the transitions, as pure functions).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from lunora_jobs.store.proposals.records import (
    DEFAULT_LIST_LIMIT,
    ActionProposal,
    ClaimResult,
    Decision,
    DecisionFilter,
    DecisionResult,
    NewActionProposal,
    ProposalLease,
    ProposalScope,
    RenewResult,
    SettleOutcome,
    SettleStatus,
)
from lunora_jobs.store.records import JSON


@runtime_checkable
class ActionProposalStore(Protocol):
    """Proposal storage for independent approvals. ``SqlStore`` and ``InMemoryStore`` implement it.

    Timestamps are epoch ms from the store's trusted clock; a decision time never comes from the
    client. ``claim_next_action_proposal`` and ``expire_action_proposals`` search across scopes and
    belong to worker infrastructure only, never to a public route.
    """

    def create_action_proposal(self, new: NewActionProposal) -> ActionProposal:
        """Create the proposal, or return the existing one when an identical snapshot was created.

        Raises ``ConflictError`` when the deterministic id exists with a different snapshot.
        """

    def get_action_proposal(self, scope: ProposalScope, proposal_id: str) -> ActionProposal | None:
        """The proposal, or None when missing or outside ``scope``."""

    def list_action_proposals(
        self, scope: ProposalScope, *, decision: DecisionFilter | None = None, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[ActionProposal]:
        """Proposals of the scope, oldest first; ``limit`` 1..1000 (else ``ValueError``)."""

    def decide_action_proposal(
        self,
        scope: ProposalScope,
        proposal_id: str,
        decision: Decision,
        *,
        decided_by: str,
        reason: str | None = None,
    ) -> DecisionResult:
        """Record a decision once: ``applied`` | ``unchanged`` | ``conflict`` | ``not_found`` | ``expired``.

        Approval queues the work in the same write. A repeat of the recorded decision is
        ``unchanged`` and keeps the original audit (who, when, why).
        """

    def claim_action_proposal(
        self, scope: ProposalScope, proposal_id: str, *, worker_id: str, lease_ms: int
    ) -> ClaimResult:
        """Lease queued work, or recover an expired lease (new token, generation + 1, same key)."""

    def renew_action_proposal_lease(
        self, scope: ProposalScope, proposal_id: str, token: str, generation: int, *, lease_ms: int
    ) -> RenewResult:
        """Extend a live lease held with ``token`` at ``generation``; ``lost`` once it expired or moved."""

    def settle_action_proposal(
        self,
        scope: ProposalScope,
        proposal_id: str,
        token: str,
        generation: int,
        status: SettleStatus,
        *,
        result: JSON = None,
        error: str | None = None,
    ) -> SettleOutcome:
        """Record the execution outcome under a live lease; a repeat by the same holder is ``unchanged``."""

    def claim_next_action_proposal(self, worker_id: str, lease_ms: int) -> ProposalLease | None:
        """Privileged: lease the oldest queued proposal or expired lease, across scopes; None if none."""

    def expire_action_proposals(self, limit: int = DEFAULT_LIST_LIMIT) -> list[str]:
        """Privileged: expire up to ``limit`` due pending proposals; returns their ids."""

    def unannounced_expired_proposals(
        self, since_ms: int, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[ActionProposal]:
        """Privileged: expired proposals whose deadline is at or after ``since_ms`` and whose expiry
        is not announced yet (``mark_expiry_announced``), earliest deadline first."""

    def mark_expiry_announced(self, proposal: ActionProposal) -> bool:
        """Privileged: record that ``proposal``'s expiry was posted to its thread (fenced on the
        version it was read with); True when this call recorded it."""
