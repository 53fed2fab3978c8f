"""The proposal state machine as pure functions, shared by the SQL and in-memory stores.

Each rule takes the current row and the trusted ``now`` and returns an outcome plus the row to
write (None: write nothing). The SQL store writes that row with an UPDATE fenced on the old
``version`` and re-runs the rule on a lost race; the memory store writes it under its lock. One
rulebook keeps the two stores' contracts identical.

    pending --approve--> queued --claim--> executing --settle--> succeeded | failed
       |  \\--reject--> rejected              ^   |
       \\--ttl--> expired                     \\---/ lease expired: recover (generation + 1)
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace

from lunora_jobs.store.proposals.records import (
    ActionProposal,
    ClaimOutcome,
    DecideOutcome,
    LeaseOutcome,
    ProposalLease,
    ProposalScope,
    SettleOutcome,
)
from lunora_jobs.store.records import JSON

CLAIMABLE = ("queued", "executing")
SETTLED = ("succeeded", "failed")


@dataclass(frozen=True, slots=True)
class StoredProposal:
    """A proposal as persisted: the public record plus the lease token only the claimer may know."""

    proposal: ActionProposal
    lease_token: str | None = None


def in_scope(p: ActionProposal, scope: ProposalScope) -> bool:
    """Whether ``scope`` names this proposal exactly (None tenant matches only None)."""
    return (p.tenant_ref, p.actor_ref, p.thread_id) == (scope.tenant_ref, scope.actor_ref, scope.thread_id)


def matches_filter(p: ActionProposal, decision: str | None) -> bool:
    """The list filter: ``pending`` (undecided, not expired), a decision, or ``expired``."""
    if decision is None:
        return True
    if decision == "pending":
        return p.status == "pending"
    if decision == "expired":
        return p.status == "expired"
    return p.decision == decision


def due_at(p: ActionProposal) -> int | None:
    """The discovery time: when queued work became available, or when a lease runs out."""
    if p.status == "queued":
        return p.decided_at
    if p.status == "executing":
        return p.lease_expires_at
    return None


def _bump(p: ActionProposal, now: int, **fields: object) -> ActionProposal:
    return replace(p, version=p.version + 1, updated_at=now, **fields)  # type: ignore[arg-type]


def _expire(p: ActionProposal, now: int) -> ActionProposal:
    return _bump(p, now, status="expired")


def is_overdue(p: ActionProposal, now: int) -> bool:
    """A pending proposal whose time to decide has run out."""
    return p.status == "pending" and p.expires_at is not None and p.expires_at <= now


def expire(row: StoredProposal, now: int) -> StoredProposal | None:
    """The expired row when the proposal is pending and overdue, else None."""
    if not is_overdue(row.proposal, now):
        return None
    return replace(row, proposal=_expire(row.proposal, now))


def announce_expiry(row: StoredProposal, now: int) -> StoredProposal | None:
    """The expired row marked announced (``settled_at``: its expiry message is posted), else None
    (not expired, or announced already)."""
    p = row.proposal
    if p.status != "expired" or p.settled_at is not None:
        return None
    return replace(row, proposal=_bump(p, now, settled_at=now))


def decide(
    row: StoredProposal, decision: str, decided_by: str, reason: str | None, now: int
) -> tuple[DecideOutcome, StoredProposal | None]:
    """Apply a decision once. An overdue pending proposal is expired instead (and written so)."""
    p = row.proposal
    if p.status == "expired":
        return "expired", None
    if p.decision is not None:
        return ("unchanged" if p.decision == decision else "conflict"), None
    if is_overdue(p, now):
        return "expired", replace(row, proposal=_expire(p, now))
    status = "queued" if decision == "approved" else "rejected"
    decided = _bump(
        p, now, status=status, decision=decision, decided_by=decided_by, decision_reason=reason,
        decided_at=now,
    )
    return "applied", replace(row, proposal=decided)


def claim(
    row: StoredProposal, worker_id: str, lease_ms: int, now: int
) -> tuple[ClaimOutcome, StoredProposal | None]:
    """Lease queued work or recover an expired lease: fresh token, ``generation + 1``, same key."""
    p = row.proposal
    if p.status == "executing" and p.lease_expires_at is not None and p.lease_expires_at > now:
        return "busy", None
    if p.status not in CLAIMABLE:
        return "not_claimable", None
    leased = _bump(
        p, now, status="executing", lease_owner=worker_id, lease_expires_at=now + lease_ms,
        generation=p.generation + 1,
    )
    return "claimed", StoredProposal(leased, secrets.token_hex(16))


def lease(row: StoredProposal, worker_id: str) -> ProposalLease:
    """The lease a successful claim hands to ``worker_id``."""
    p = row.proposal
    if row.lease_token is None or p.lease_expires_at is None:  # pragma: no cover - claim sets both
        raise RuntimeError("a claimed proposal must carry a lease token and expiry")
    return ProposalLease(p, row.lease_token, p.generation, worker_id, p.lease_expires_at)


def _holds_live_lease(row: StoredProposal, token: str, generation: int, now: int) -> bool:
    p = row.proposal
    return (
        p.status == "executing"
        and p.generation == generation
        and row.lease_token is not None
        and secrets.compare_digest(row.lease_token, token)
        and p.lease_expires_at is not None
        and p.lease_expires_at > now
    )


def renew(
    row: StoredProposal, token: str, generation: int, lease_ms: int, now: int
) -> tuple[LeaseOutcome, StoredProposal | None]:
    """Extend a live lease held with ``token`` at ``generation``; anything else lost it."""
    if not _holds_live_lease(row, token, generation, now):
        return "lost", None
    return "renewed", replace(row, proposal=_bump(row.proposal, now, lease_expires_at=now + lease_ms))


def settle(
    row: StoredProposal, token: str, generation: int, status: str, result: JSON, error: str | None, now: int
) -> tuple[SettleOutcome, StoredProposal | None]:
    """Record the outcome under a live lease. The same holder repeating it gets ``unchanged``."""
    p = row.proposal
    if (
        p.status in SETTLED
        and p.generation == generation
        and row.lease_token is not None
        and secrets.compare_digest(row.lease_token, token)
    ):
        return "unchanged", None
    if not _holds_live_lease(row, token, generation, now):
        return "lost", None
    done = _bump(
        p, now, status=status, result=result, error=error, settled_at=now, lease_owner=None,
        lease_expires_at=None,
    )
    return "settled", replace(row, proposal=done)
