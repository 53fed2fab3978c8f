"""Recording a human decision on a proposal and setting its consequence in motion.

The caller has authorized the deciding actor already (``app.proposals``: the app's hook, never the
possession of a proposal id). An approval queues the work in the decision's own write; the
dispatcher is then asked for a proposal task, and beat's tick finds the work anyway if that message
is lost. A rejection is delivered to the thread as a message. A repeat of the same decision
(``unchanged``) re-sends both, which is harmless: the claim and the message key dedupe them.
"""

from __future__ import annotations

from lunora_jobs.engine.actions.outcome import report_outcome
from lunora_jobs.engine.actions.propose import PROPOSAL_ROUTE, PROPOSAL_STEP, proposal_store
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.errors import ConflictError, NotFoundError, ProposalExpiredError
from lunora_jobs.store.proposals import ActionProposal, DecisionResult


def decide(
    deps: EngineDeps, proposal: ActionProposal, *, approve: bool, by: str, reason: str | None = None
) -> DecisionResult:
    """Record ``approve`` on ``proposal`` (read in its scope); ``applied`` or ``unchanged``.

    Raises ``ConflictError`` when the other decision was recorded first, ``ProposalExpiredError`` when
    its time to decide ran out, ``NotFoundError`` when it vanished (its thread was deleted).
    """
    store = proposal_store(deps.store)
    result = store.decide_action_proposal(
        proposal.scope, proposal.id, "approved" if approve else "rejected", decided_by=by, reason=reason
    )
    decided = result.proposal
    if result.outcome == "not_found" or decided is None:
        raise NotFoundError(f"no action proposal {proposal.id!r}")
    if result.outcome == "expired":
        raise ProposalExpiredError(
            f"action proposal {proposal.id} expired before it was decided; the action will not run "
            "(ask the agent again if it is still wanted)."
        )
    if result.outcome == "conflict":
        raise ConflictError(
            f"action proposal {proposal.id} was already {decided.decision} by {decided.decided_by!r}; "
            "a decision cannot be changed."
        )
    if decided.decision == "approved":
        if decided.status == "queued":
            deps.dispatcher.dispatch([StepTask(decided.id, PROPOSAL_STEP, PROPOSAL_ROUTE)])
    else:
        report_outcome(deps, decided, "rejected", reason=decided.decision_reason)
    return result
