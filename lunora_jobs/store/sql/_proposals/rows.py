"""Rows of ``agent_action_proposals``: records <-> columns, scope/filter clauses, the discovery reads."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.store.proposals import _state_machine as rules
from lunora_jobs.store.proposals.records import ActionProposal, DecisionFilter, ProposalScope, canonical_json
from lunora_jobs.store.records import JSON
from lunora_jobs.store.schema import action_proposals as T

_JSON_COLUMNS = ("input", "card", "result")
_FIELDS = tuple(f.name for f in dataclasses.fields(ActionProposal))


def dump(value: JSON) -> str | None:
    """Encode a JSON column canonically (None stays SQL NULL)."""
    return None if value is None else canonical_json(value)


def load(text: str | None) -> JSON:
    """Decode a JSON column."""
    return None if text is None else json.loads(text)


def to_stored(row: sa.RowMapping) -> rules.StoredProposal:
    """A row as the stored proposal (record + lease token)."""
    fields = {name: row[name] for name in _FIELDS}
    for name in _JSON_COLUMNS:
        fields[name] = load(row[name])
    return rules.StoredProposal(ActionProposal(**fields), row["lease_token"])


def column_values(stored: rules.StoredProposal) -> dict[str, Any]:
    """Every column of the row, with the derived discovery time ``due_at``."""
    p = stored.proposal
    values: dict[str, Any] = {name: getattr(p, name) for name in _FIELDS}
    for name in _JSON_COLUMNS:
        values[name] = dump(values[name])
    values["lease_token"] = stored.lease_token
    values["due_at"] = rules.due_at(p)
    return values


def scope_clause(scope: ProposalScope) -> sa.ColumnElement[bool]:
    """The full scope as a WHERE clause: a None tenant matches only NULL, never any tenant."""
    tenant = T.c.tenant_ref.is_(None) if scope.tenant_ref is None else T.c.tenant_ref == scope.tenant_ref
    return sa.and_(tenant, T.c.actor_ref == scope.actor_ref, T.c.thread_id == scope.thread_id)


def filter_clause(decision: DecisionFilter | None) -> sa.ColumnElement[bool]:
    """The list filter (see ``_state_machine.matches_filter``) as a WHERE clause."""
    if decision is None:
        return sa.true()
    column = T.c.status if decision in ("pending", "expired") else T.c.decision
    clause: sa.ColumnElement[bool] = column == decision
    return clause


def fenced_update(conn: Connection, old: rules.StoredProposal, new: rules.StoredProposal) -> bool:
    """Write ``new`` over ``old`` only if nobody wrote since ``old`` was read: True when this writer won."""
    values = column_values(new)
    del values["id"]
    fence = sa.and_(T.c.id == old.proposal.id, T.c.version == old.proposal.version)
    return conn.execute(T.update().where(fence).values(**values)).rowcount == 1


def discovery_query(now: int, limit: int) -> sa.Select[Any]:
    """Due work across scopes: queued proposals and expired leases, over ``(status, due_at)``."""
    return (
        sa.select(T)
        .where(T.c.status.in_(rules.CLAIMABLE), T.c.due_at <= now)
        .order_by(T.c.due_at, T.c.id)
        .limit(limit)
    )


def unannounced_query(since_ms: int, limit: int) -> sa.Select[Any]:
    """Expired proposals not yet announced (``settled_at`` empty), over ``(status, expires_at)``."""
    return (
        sa.select(T)
        .where(T.c.status == "expired", T.c.expires_at >= since_ms, T.c.settled_at.is_(None))
        .order_by(T.c.expires_at, T.c.id)
        .limit(limit)
    )


def expiry_query(now: int, limit: int) -> sa.Select[Any]:
    """Ids of overdue pending proposals, earliest deadline first, over ``(status, expires_at)``."""
    return (
        sa.select(T.c.id)
        .where(T.c.status == "pending", T.c.expires_at <= now)
        .order_by(T.c.expires_at, T.c.id)
        .limit(limit)
    )


