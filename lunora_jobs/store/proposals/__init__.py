"""Independent action proposals: the records, the ``ActionProposalStore`` capability and the rules
its two implementations share (``SqlStore`` in ``store.sql``, ``InMemoryStore`` in ``store.memory``).

Example::

    from lunora_jobs.store.proposals import NewActionProposal, ProposalScope
    scope = ProposalScope(tenant_ref=None, actor_ref="user-7", thread_id=thread.id)
    p = store.create_action_proposal(NewActionProposal(scope, call_id="c1", tool_name="t", input={}))
"""

from lunora_jobs.store.proposals.base import ActionProposalStore
from lunora_jobs.store.proposals.records import (
    DECISION_FILTERS,
    DECISIONS,
    DEFAULT_LIST_LIMIT,
    MAX_LIST_LIMIT,
    SETTLE_STATUSES,
    ActionProposal,
    ClaimOutcome,
    ClaimResult,
    DecideOutcome,
    Decision,
    DecisionFilter,
    DecisionResult,
    LeaseOutcome,
    NewActionProposal,
    ProposalLease,
    ProposalScope,
    ProposalStatus,
    RenewResult,
    SettleOutcome,
    SettleStatus,
    action_proposal_id,
    canonical_json,
    default_idempotency_key,
)

__all__ = [
    "DECISIONS",
    "DECISION_FILTERS",
    "DEFAULT_LIST_LIMIT",
    "MAX_LIST_LIMIT",
    "SETTLE_STATUSES",
    "ActionProposal",
    "ActionProposalStore",
    "ClaimOutcome",
    "ClaimResult",
    "DecideOutcome",
    "Decision",
    "DecisionFilter",
    "DecisionResult",
    "LeaseOutcome",
    "NewActionProposal",
    "ProposalLease",
    "ProposalScope",
    "ProposalStatus",
    "RenewResult",
    "SettleOutcome",
    "SettleStatus",
    "action_proposal_id",
    "canonical_json",
    "default_idempotency_key",
]
