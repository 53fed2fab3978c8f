"""Governance: usage sums and quota statuses, narrowed by the caller's verified identity
(``api/governance_access.py``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from lunora_jobs.api.auth.base import Identity
from lunora_jobs.api.context import ApiContext
from lunora_jobs.api.governance_access import quota_scope, usage_scope
from lunora_jobs.api.governance_schemas import (
    QuotaStatusesOut,
    UsageGroupsOut,
    quota_status_view,
    usage_group_view,
)
from lunora_jobs.api.problems import problem_responses
from lunora_jobs.api.runs_page import Filter
from lunora_jobs.governance import GroupBy

GroupParam = Annotated[GroupBy | None, Query(
    description="actor | tenant | agent | model | day; none: one total.")]
TimeParam = Annotated[datetime | None, Query(
    description="An ISO 8601 date-time (UTC when it names no offset).")]


def router(ctx: ApiContext) -> APIRouter:
    """The governance routes."""
    api = APIRouter(tags=["governance"], responses=problem_responses(403))
    identity = Depends(ctx.gate)

    @api.get("/governance/usage", response_model=UsageGroupsOut)
    def get_usage(
        group_by: GroupParam = None, since: TimeParam = None, until: TimeParam = None,
        actor: Filter = None, tenant: Filter = None, agent: Filter = None, model: Filter = None,
        who: Identity = identity,
    ) -> UsageGroupsOut:
        """Tokens and estimated cost summed over the usage ledger, grouped and filtered. What you may
        read follows from your identity: your own usage (in your tenant), your tenant's as its admin,
        everything as the operator."""
        scope = usage_scope(who, actor, tenant)
        groups = ctx.lunora.governance.usage(group_by, since=since or 0, until=until, actor=scope.actor,
                                             tenant=scope.tenant, agent=agent, model=model)
        return UsageGroupsOut(groups=[usage_group_view(g) for g in groups])

    @api.get("/governance/quota", response_model=QuotaStatusesOut, responses=problem_responses(503))
    def get_quota(actor: Filter = None, tenant: Filter = None, who: Identity = identity) -> QuotaStatusesOut:
        """Where an actor and / or a tenant stand against the app's quotas (default: you and your
        tenant). ``exceeded``: new runs are refused and running ones stop at their next turn."""
        scope = quota_scope(who, actor, tenant)
        statuses = ctx.lunora.governance.quota_status(actor=scope.actor, tenant=scope.tenant) if (
            scope.actor is not None or scope.tenant is not None) else []
        return QuotaStatusesOut(statuses=[quota_status_view(s) for s in statuses])

    return api
