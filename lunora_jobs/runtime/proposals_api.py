"""``app.proposals``: list and decide the action proposals of independent-mode agents.

A proposal belongs to a scope (tenant, the owner of the run that proposed it, its thread). The
caller names the thread and its tenant; the app's ``authorize_action`` hook then says whether the
acting identity may see and decide each proposal (default: only the actor it belongs to). A
proposal the actor may not act on is reported exactly like a missing one, so possession of a
proposal id grants nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from lunora_jobs.engine.actions import decide, proposal_store
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.errors import NotFoundError
from lunora_jobs.store.proposals import DEFAULT_LIST_LIMIT, ActionProposal, DecisionFilter, ProposalScope

AuthorizeAction = Callable[[str, ActionProposal], bool]
"""``authorize(actor, proposal) -> bool``: may the verified ``actor`` see and decide ``proposal``?"""


def owner_only(actor: str, proposal: ActionProposal) -> bool:
    """The default ``authorize_action``: only the actor the proposal is scoped to."""
    return actor == proposal.actor_ref


class ProposalsAPI:
    """Example::

        [p] = app.proposals.list("t1", actor="user-7", decision="pending")
        app.proposals.decide("t1", p.id, approve=True, actor="user-7")   # "applied"
    """

    def __init__(self, deps: EngineDeps, authorize: AuthorizeAction = owner_only) -> None:
        self._deps = deps
        self._authorize = authorize

    def list(
        self, thread_key: str, *, actor: str, tenant: str | None = None,
        decision: DecisionFilter | None = None, limit: int = DEFAULT_LIST_LIMIT,
    ) -> list[ActionProposal]:
        """The thread's proposals ``actor`` may act on, oldest first (``decision``: ``pending`` |
        ``approved`` | ``rejected`` | ``expired``)."""
        scope = self._scope(thread_key, tenant)
        if scope is None or not actor:
            return []
        found = proposal_store(self._deps.store).list_action_proposals(scope, decision=decision, limit=limit)
        return [p for p in found if self._authorize(actor, p)]

    def get(
        self, thread_key: str, proposal_id: str, *, actor: str, tenant: str | None = None
    ) -> ActionProposal:
        """One proposal, or ``NotFoundError`` (also when ``actor`` may not act on it)."""
        scope = self._scope(thread_key, tenant)
        found = None
        if scope is not None and actor:
            found = proposal_store(self._deps.store).get_action_proposal(scope, proposal_id)
        if found is None or not self._authorize(actor, found):
            raise NotFoundError(f"no action proposal {proposal_id!r} on thread {thread_key!r}")
        return found

    def decide(
        self, thread_key: str, proposal_id: str, *, approve: bool, actor: str, tenant: str | None = None,
        reason: str | None = None,
    ) -> str:
        """Approve (a worker runs the action and posts its outcome to the thread) or reject (the
        thread is told). Returns ``"applied"``, or ``"unchanged"`` for a repeat of the recorded
        decision; raises ``ConflictError`` for a contradicting one, ``ProposalExpiredError`` after
        its time ran out and ``NotFoundError`` when ``actor`` may not act on it."""
        proposal = self.get(thread_key, proposal_id, actor=actor, tenant=tenant)
        return decide(self._deps, proposal, approve=approve, by=actor, reason=reason).outcome

    def _scope(self, thread_key: str, tenant: str | None) -> ProposalScope | None:
        thread = self._deps.store.get_thread(thread_key)
        if thread is None or not thread.owner:  # proposals are only ever filed for owned runs
            return None
        return ProposalScope(tenant_ref=tenant, actor_ref=thread.owner, thread_id=thread.id)
