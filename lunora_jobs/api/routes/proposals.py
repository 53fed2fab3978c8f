"""Action proposals of independent-mode agents: list, read, approve, reject.

The caller acts as its verified subject, inside its verified tenant: a proposal is looked up in the
scope (tenant, thread owner, thread) and then shown only if the app's ``authorize_action`` hook lets
that subject act on it. Anything else — another tenant's proposal, one the hook refuses, one that does
not exist — is the same 404, so a proposal id grants nothing.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path, Query

from lunora_jobs.api.auth.base import Identity
from lunora_jobs.api.context import ApiContext
from lunora_jobs.api.governance_schemas import ProposalOut, ProposalsOut, proposal_view
from lunora_jobs.api.problems import problem_responses
from lunora_jobs.api.schemas import DecisionIn, DecisionOut, Key, is_storable
from lunora_jobs.errors import NotFoundError
from lunora_jobs.store.proposals import DecisionFilter

ThreadKey = Annotated[Key, Path(description="The thread's key.")]
ProposalId = Annotated[str, Path(min_length=1, max_length=255, description="The proposal's id.")]


def router(ctx: ApiContext) -> APIRouter:
    """The proposal routes."""
    api = APIRouter(tags=["proposals"], responses=problem_responses(404))
    identity = Depends(ctx.gate)
    proposals = ctx.lunora.proposals

    def found(key: str, proposal_id: str, who: Identity) -> ProposalOut:
        if not is_storable(proposal_id):
            raise NotFoundError(f"no action proposal {proposal_id!r} on thread {key!r}")
        return proposal_view(proposals.get(key, proposal_id, actor=who.subject, tenant=who.tenant))

    @api.get("/threads/{key}/proposals", response_model=ProposalsOut)
    def list_proposals(
        key: ThreadKey,
        decision: Annotated[DecisionFilter | None, Query(description="Only this decision's.")] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
        who: Identity = identity,
    ) -> ProposalsOut:
        """The thread's proposals you may act on, oldest first (none: an empty list)."""
        found_list = proposals.list(key, actor=who.subject, tenant=who.tenant, decision=decision, limit=limit)
        return ProposalsOut(proposals=[proposal_view(p) for p in found_list])

    @api.get("/threads/{key}/proposals/{proposal_id}", response_model=ProposalOut)
    def get_proposal(key: ThreadKey, proposal_id: ProposalId, who: Identity = identity) -> ProposalOut:
        """One proposal you may act on."""
        return found(key, proposal_id, who)

    def decide(
        key: str, proposal_id: str, approve: bool, body: DecisionIn | None, who: Identity
    ) -> DecisionOut:
        found(key, proposal_id, who)
        result = proposals.decide(key, proposal_id, approve=approve, actor=who.subject, tenant=who.tenant,
                                  reason=body.reason if body else None)
        return DecisionOut(result="applied" if result == "applied" else "unchanged")

    @api.post("/threads/{key}/proposals/{proposal_id}/approve", response_model=DecisionOut,
              responses=problem_responses(409))
    def approve(key: ThreadKey, proposal_id: ProposalId, body: Annotated[DecisionIn | None, Body()] = None,
                who: Identity = identity) -> DecisionOut:
        """Approve: a worker runs the action once and posts its outcome to the thread."""
        return decide(key, proposal_id, True, body, who)

    @api.post("/threads/{key}/proposals/{proposal_id}/reject", response_model=DecisionOut,
              responses=problem_responses(409))
    def reject(key: ThreadKey, proposal_id: ProposalId, body: Annotated[DecisionIn | None, Body()] = None,
               who: Identity = identity) -> DecisionOut:
        """Reject: the action never runs; the thread is told (with ``reason``)."""
        return decide(key, proposal_id, False, body, who)

    return api
