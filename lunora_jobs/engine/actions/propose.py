"""Filing an action proposal from a tool step (independent mode): the call becomes a stored
proposal and the model is told it awaits approval.

The proposal's ``call_id`` is ``<run_id>:<call_id>``: providers (and the offline model) reuse call
ids across runs, and a second run's call must not land on the first run's (maybe executed) proposal.
A replayed tool step files the same snapshot again, which the store answers with the existing row.
"""

from __future__ import annotations

from dataclasses import dataclass

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.memo import LocatedCall
from lunora_jobs.errors import ConfigurationError, ProposalScopeError
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.proposals import ActionProposalStore, NewActionProposal, ProposalScope
from lunora_jobs.store.records import RunRecord

PROPOSAL_ROUTE = "proposal"
"""The dispatch route of proposal work (``workers``: the ``lunora.proposals`` task)."""

PROPOSAL_STEP = "proposal:execute"
"""The step name a proposal task carries (its ``run_id`` is the proposal id, for the task id)."""


@dataclass(frozen=True, slots=True)
class Proposed:
    """What the tool step answers for a proposed call: the tool message text and the proposal id."""

    text: str
    proposal_id: str


def proposal_store(store: AgentStore) -> ActionProposalStore:
    """The store's ``ActionProposalStore`` capability (``SqlStore`` and ``InMemoryStore`` have it)."""
    if not isinstance(store, ActionProposalStore):
        raise ConfigurationError(
            f"{type(store).__name__} does not store action proposals, which "
            "action_approval_mode='independent' needs; use SqlStore or InMemoryStore, or implement "
            "lunora_jobs.store.proposals.ActionProposalStore on your store."
        )
    return store


def run_scope(run: RunRecord) -> ProposalScope:
    """Who a run's proposals belong to: its tenant, its owner and its thread. No owner: refused."""
    if not run.owner:
        raise ProposalScopeError(
            f"run {run.id} of agent {run.agent!r} has no owner, so an action it proposes could be "
            "decided by anyone; start runs of independent-mode agents with owner=<the verified caller>."
        )
    return ProposalScope(tenant_ref=run.tenant, actor_ref=run.owner, thread_id=run.thread_id)


def propose(deps: EngineDeps, run: RunRecord, agent: AgentDefinition, located: LocatedCall) -> Proposed:
    """File (or find again) the proposal for ``located``'s call; the text the model reads back."""
    store = proposal_store(deps.store)
    call = located.call
    tool_def = agent.tools.get(call.name)
    card = {
        "agent": agent.name, "tool": call.name, "tool_call_id": call.id,
        "description": tool_def.description if tool_def is not None else None,
    }
    ttl_ms = None if agent.proposal_ttl_s is None else int(agent.proposal_ttl_s * 1000)
    proposal = store.create_action_proposal(NewActionProposal(
        run_scope(run), call_id=f"{run.id}:{call.id}", tool_name=call.name, input=call.arguments,
        card=card, run_id=run.id, ttl_ms=ttl_ms,
    ))
    text = (
        f"The action '{call.name}' needs a human decision: it was filed as proposal {proposal.id} and "
        "runs once approved; its outcome will be posted to this conversation. Do not call it again "
        "for this request; carry on with the rest."
    )
    return Proposed(text, proposal.id)
