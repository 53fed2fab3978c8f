"""Independent action proposals: records, outcomes and the ``ActionProposalStore`` capability.

With ``action_approval_mode="independent"`` a tool call that needs approval becomes a *proposal*
stored apart from its run: an immutable snapshot of the tool input and the card shown to the
approver, a decision audit, and a recoverable execution lease. Approving writes the decision and
queues the work in the same row, so a worker discovers it with ``claim_next_action_proposal``.

Every scoped operation takes the full ``ProposalScope`` (tenant, actor, thread). A proposal outside
the caller's scope is reported exactly like a missing one (``not_found``): possession of a proposal
id is never authorization, and the application must authorize the deciding actor before calling.

Example::

    scope = ProposalScope(tenant_ref=None, actor_ref="user-7", thread_id=thread.id)
    p = store.create_action_proposal(NewActionProposal(scope, call_id="call_1", tool_name="charge",
                                                       input={"amount": 9000}, card={"title": "Charge"}))
    store.decide_action_proposal(scope, p.id, "approved", decided_by="user-7").outcome  # "applied"
    lease = store.claim_next_action_proposal("worker-1", lease_ms=30_000)             # privileged
    store.settle_action_proposal(scope, p.id, lease.token, lease.generation, "succeeded", result=...)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Literal

from lunora_jobs.store.records import JSON

DEFAULT_LIST_LIMIT = 100
MAX_LIST_LIMIT = 1000

ProposalStatus = Literal["pending", "queued", "executing", "succeeded", "failed", "rejected", "expired"]
Decision = Literal["approved", "rejected"]
DecisionFilter = Literal["pending", "approved", "rejected", "expired"]
DecideOutcome = Literal["applied", "unchanged", "conflict", "not_found", "expired"]
ClaimOutcome = Literal["claimed", "busy", "not_claimable", "not_found"]
LeaseOutcome = Literal["renewed", "lost", "not_found"]
SettleOutcome = Literal["settled", "unchanged", "lost", "not_found"]
SettleStatus = Literal["succeeded", "failed"]

DECISIONS: tuple[str, ...] = ("approved", "rejected")
DECISION_FILTERS: tuple[str, ...] = ("pending", "approved", "rejected", "expired")
SETTLE_STATUSES: tuple[str, ...] = ("succeeded", "failed")


@dataclass(frozen=True, slots=True)
class ProposalScope:
    """Who may see a proposal: ``tenant_ref`` (None when the app has no tenants), actor and thread.

    ``tenant_ref`` has no default on purpose: a caller states "no tenant" explicitly.
    """

    tenant_ref: str | None
    actor_ref: str
    thread_id: str


@dataclass(frozen=True, slots=True)
class NewActionProposal:
    """A proposal to create. ``call_id`` (the provider's tool-call id) makes the id deterministic.

    ``ttl_ms`` counts from the store's clock at creation (None: the proposal never expires).
    ``idempotency_key`` defaults to one derived from the id; it never changes afterwards.
    """

    scope: ProposalScope
    call_id: str
    tool_name: str
    input: JSON
    card: JSON = None
    run_id: str | None = None
    ttl_ms: int | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True, slots=True)
class ActionProposal:
    """A stored proposal. ``input`` and ``card`` are the immutable snapshot taken at creation.

    ``generation`` counts execution claims (0 = never claimed) and fences lease holders;
    ``version`` moves on every write and fences concurrent updates. The lease token is not part of
    this record: only the claimer holds it (see ``ProposalLease``).
    """

    id: str
    tenant_ref: str | None
    actor_ref: str
    thread_id: str
    run_id: str | None
    call_id: str
    tool_name: str
    input: JSON
    card: JSON
    idempotency_key: str
    status: str
    decision: str | None
    decided_by: str | None
    decision_reason: str | None
    decided_at: int | None
    expires_at: int | None
    lease_owner: str | None
    lease_expires_at: int | None
    generation: int
    result: JSON
    error: str | None
    settled_at: int | None
    version: int
    created_at: int
    updated_at: int

    @property
    def scope(self) -> ProposalScope:
        """The scope every read / decision / claim of this proposal must present."""
        return ProposalScope(self.tenant_ref, self.actor_ref, self.thread_id)


@dataclass(frozen=True, slots=True)
class DecisionResult:
    """What ``decide_action_proposal`` did; ``proposal`` is None only for ``not_found``."""

    outcome: DecideOutcome
    proposal: ActionProposal | None


@dataclass(frozen=True, slots=True)
class ProposalLease:
    """An execution lease: present ``token`` and ``generation`` to renew or settle before ``expires_at``.

    ``idempotency_key`` is the proposal's, unchanged across recoveries: the side effect must dedupe
    on it, because delivery is at least once.
    """

    proposal: ActionProposal
    token: str
    generation: int
    worker_id: str
    expires_at: int

    @property
    def idempotency_key(self) -> str:
        """The proposal's stable idempotency key."""
        return self.proposal.idempotency_key


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """What ``claim_action_proposal`` did; ``lease`` is set only for ``claimed``."""

    outcome: ClaimOutcome
    lease: ProposalLease | None = None
    proposal: ActionProposal | None = None


@dataclass(frozen=True, slots=True)
class RenewResult:
    """What ``renew_action_proposal_lease`` did; ``expires_at`` is the new expiry when renewed."""

    outcome: LeaseOutcome
    expires_at: int | None = None


def action_proposal_id(scope: ProposalScope, call_id: str) -> str:
    """The deterministic id of the proposal for ``call_id`` in ``scope`` (``ap_`` + 40 hex chars)."""
    material = json.dumps([scope.tenant_ref, scope.actor_ref, scope.thread_id, call_id])
    return "ap_" + hashlib.sha256(material.encode()).hexdigest()[:40]


def default_idempotency_key(proposal_id: str) -> str:
    """The idempotency key a proposal gets when the caller names none; stable for its lifetime."""
    return f"action-proposal:{proposal_id}"


def canonical_json(value: JSON) -> str:
    """The snapshot encoding: sorted keys, so equal snapshots compare equal as text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
