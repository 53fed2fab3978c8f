"""What a caller hands the proposal stores: validation, and building the pending record of a create.

Both stores call these before touching storage, so a bad argument fails the same way everywhere:
``IdentityTooLongError`` past 255 characters, ``ValueError`` for anything else out of range.
"""

from __future__ import annotations

import json

from lunora_jobs.errors import ConflictError, IdentityTooLongError
from lunora_jobs.store.base import MAX_IDENTITY
from lunora_jobs.store.proposals.records import (
    DECISION_FILTERS,
    DECISIONS,
    MAX_LIST_LIMIT,
    SETTLE_STATUSES,
    ActionProposal,
    NewActionProposal,
    ProposalScope,
    action_proposal_id,
    canonical_json,
    default_idempotency_key,
)
from lunora_jobs.store.records import JSON


def check_identity(name: str, value: str | None, *, required: bool = True) -> None:
    """Raise ``IdentityTooLongError`` past 255 characters, ``ValueError`` when a required one is empty."""
    if value is None:
        if required:
            raise ValueError(f"{name} is required; pass a non-empty string")
        return
    if len(value) > MAX_IDENTITY:
        raise IdentityTooLongError(
            f"{name} is {len(value)} characters; identity fields are limited to {MAX_IDENTITY}. "
            "Use a shorter id (hash long external ids before storing them)."
        )
    if required and not value:
        raise ValueError(f"{name} is required; pass a non-empty string")


def check_scope(scope: ProposalScope) -> None:
    """Validate the three scope fields (tenant may be None, never longer than 255)."""
    check_identity("tenant_ref", scope.tenant_ref, required=False)
    check_identity("actor_ref", scope.actor_ref)
    check_identity("thread_id", scope.thread_id)


def check_limit(limit: int) -> None:
    """Lists and sweeps take 1..1000 rows at a time."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST_LIMIT:
        raise ValueError(f"limit must be an integer from 1 to {MAX_LIST_LIMIT}, got {limit!r}")


def check_lease_ms(lease_ms: int) -> None:
    """A lease must last at least one millisecond."""
    if isinstance(lease_ms, bool) or not isinstance(lease_ms, int) or lease_ms < 1:
        raise ValueError(f"lease_ms must be a positive integer of milliseconds, got {lease_ms!r}")


def check_new_proposal(new: NewActionProposal) -> None:
    """Validate a proposal before it is written."""
    check_scope(new.scope)
    check_identity("call_id", new.call_id)
    check_identity("tool_name", new.tool_name)
    check_identity("run_id", new.run_id, required=False)
    check_identity("idempotency_key", new.idempotency_key, required=False)
    if new.ttl_ms is not None and (isinstance(new.ttl_ms, bool) or new.ttl_ms < 1):
        raise ValueError(f"ttl_ms must be a positive number of milliseconds or None, got {new.ttl_ms!r}")


def check_decision(decision: str) -> None:
    """A decision is ``approved`` or ``rejected``."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {DECISIONS}, got {decision!r}")


def check_decision_filter(decision: str | None) -> None:
    """A list filter is None or one of ``pending | approved | rejected | expired``."""
    if decision is not None and decision not in DECISION_FILTERS:
        raise ValueError(f"decision filter must be None or one of {DECISION_FILTERS}, got {decision!r}")


def check_settle_status(status: str) -> None:
    """An execution ends ``succeeded`` or ``failed``."""
    if status not in SETTLE_STATUSES:
        raise ValueError(f"status must be one of {SETTLE_STATUSES}, got {status!r}")



def new_proposal(
    *,
    proposal_id: str,
    scope: ProposalScope,
    run_id: str | None,
    call_id: str,
    tool_name: str,
    input: JSON,
    card: JSON,
    idempotency_key: str,
    expires_at: int | None,
    now: int,
) -> ActionProposal:
    """A fresh pending proposal at version 1, never claimed."""
    return ActionProposal(
        id=proposal_id, tenant_ref=scope.tenant_ref, actor_ref=scope.actor_ref, thread_id=scope.thread_id,
        run_id=run_id, call_id=call_id, tool_name=tool_name, input=input, card=card,
        idempotency_key=idempotency_key, status="pending", decision=None, decided_by=None,
        decision_reason=None, decided_at=None, expires_at=expires_at, lease_owner=None,
        lease_expires_at=None, generation=0, result=None, error=None, settled_at=None, version=1,
        created_at=now, updated_at=now,
    )


def same_snapshot(existing: ActionProposal, candidate: ActionProposal) -> bool:
    """Whether a repeated create describes the stored proposal (times aside): then it is idempotent."""
    return (
        existing.run_id == candidate.run_id
        and existing.tool_name == candidate.tool_name
        and existing.idempotency_key == candidate.idempotency_key
        and canonical_json(existing.input) == canonical_json(candidate.input)
        and canonical_json(existing.card) == canonical_json(candidate.card)
    )


def build_new(new: NewActionProposal, now: int) -> ActionProposal:
    """Validate ``new`` and build its pending record with the deterministic id and stable key."""
    check_new_proposal(new)
    proposal_id = action_proposal_id(new.scope, new.call_id)
    # Round-trip the snapshot through JSON so memory and SQL hand back equal values (tuples -> lists).
    return new_proposal(
        proposal_id=proposal_id, scope=new.scope, run_id=new.run_id, call_id=new.call_id,
        tool_name=new.tool_name, input=json.loads(canonical_json(new.input)),
        card=json.loads(canonical_json(new.card)),
        idempotency_key=new.idempotency_key or default_idempotency_key(proposal_id),
        expires_at=None if new.ttl_ms is None else now + new.ttl_ms, now=now,
    )


def snapshot_conflict(proposal_id: str) -> ConflictError:
    """The error for a create that reuses a deterministic id with a different snapshot."""
    return ConflictError(
        f"action proposal {proposal_id} already exists with a different input/card snapshot; "
        "snapshots are immutable — use a new call_id for a different action"
    )
