"""The governance and action-proposal bodies of the API (pydantic): usage groups, quota statuses,
proposals — and the views that build them from the records."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from lunora_jobs.governance import QuotaStatus, UsageGroup
from lunora_jobs.store.proposals import ActionProposal


class UsageGroupOut(BaseModel):
    """Sums over the usage rows of one group. ``key``: the actor / tenant / agent / model (null for rows
    without one), the UTC day's first epoch ms for ``day``, null for an ungrouped total. ``cost_usd`` is
    null when no row has a figure (never 0); ``unpriced_rows`` says how many rows it leaves out."""

    key: str | int | None
    rows: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    total_tokens: int
    cost_usd: float | None
    unpriced_rows: int


class UsageGroupsOut(BaseModel):
    """Usage groups, ordered by key (null first)."""

    groups: list[UsageGroupOut]


class QuotaStatusOut(BaseModel):
    """Where one actor or tenant stands against one quota. ``window``: ``"day"`` (the UTC day) or a
    rolling window in seconds; ``exceeded``: usage is at or over a limit (new runs are refused)."""

    scope: Literal["actor", "tenant"]
    key: str
    window: Literal["day"] | int
    tokens_limit: int | None
    cost_limit_usd: float | None
    tokens_used: int
    cost_used_usd: float | None
    unpriced_rows: int
    start_ms: int
    end_ms: int
    resets_at_ms: int | None
    exceeded: bool


class QuotaStatusesOut(BaseModel):
    """The quotas that bind the actor and tenant asked about (none configured: empty)."""

    statuses: list[QuotaStatusOut]


class ProposalOut(BaseModel):
    """An action proposal of an independent-mode agent: the tool call it asks to run (``input``, the
    immutable snapshot taken when it was proposed), its decision and its outcome."""

    id: str
    tool_name: str
    call_id: str
    input: Any = Field(description="The tool call's arguments as proposed.")
    card: Any = Field(description="What the proposal shows a decider.")
    status: str
    decision: str | None
    decided_by: str | None
    decision_reason: str | None
    decided_at: int | None
    expires_at: int | None
    result: Any = Field(description="The tool's result once it ran, else null.")
    error: str | None
    created_at: int


class ProposalsOut(BaseModel):
    """A thread's proposals the caller may act on, oldest first."""

    proposals: list[ProposalOut]


def usage_group_view(group: UsageGroup) -> UsageGroupOut:
    """The body of one usage group."""
    return UsageGroupOut(
        key=group.key, rows=group.rows, input_tokens=group.input_tokens, output_tokens=group.output_tokens,
        cache_read_tokens=group.cache_read_tokens, cache_write_tokens=group.cache_write_tokens,
        total_tokens=group.total_tokens, cost_usd=group.cost_usd, unpriced_rows=group.unpriced_rows,
    )


def quota_status_view(status: QuotaStatus) -> QuotaStatusOut:
    """The body of one quota status."""
    quota = status.quota
    return QuotaStatusOut(
        scope=quota.scope, key=status.key, window=quota.window, tokens_limit=quota.tokens,
        cost_limit_usd=quota.cost_usd, tokens_used=status.tokens_used, cost_used_usd=status.cost_used_usd,
        unpriced_rows=status.unpriced_rows, start_ms=status.start_ms, end_ms=status.end_ms,
        resets_at_ms=status.resets_at_ms, exceeded=status.exceeded,
    )


def proposal_view(p: ActionProposal) -> ProposalOut:
    """The body of one proposal (no lease, scope or version internals)."""
    return ProposalOut(
        id=p.id, tool_name=p.tool_name, call_id=p.call_id, input=p.input, card=p.card, status=p.status,
        decision=p.decision, decided_by=p.decided_by, decision_reason=p.decision_reason,
        decided_at=p.decided_at, expires_at=p.expires_at, result=p.result, error=p.error,
        created_at=p.created_at,
    )
