"""A proposal's outcome reaches its thread — and, for agents declared with
``wake_on_proposal_outcome=True``, wakes the agent with a new run.

The message is keyed by the proposal (``deliver.py``), and the wake run's id derives from the proposal
too, so reporting an outcome twice (a worker killed before it settled, a repeated decision, a tick
that announces an expiry again after a crash) posts one message and starts at most one run. A wake is
skipped, not retried, when another run holds the thread (that run reads the outcome message at its
next turn) or when the actor or tenant is over quota; every other error is the caller's.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from lunora_jobs.engine.actions.deliver import deliver_outcome
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.start import start_run
from lunora_jobs.errors import ConflictError, QuotaExceededError
from lunora_jobs.store.proposals import ActionProposal

log = logging.getLogger(__name__)

_WAKE = uuid.UUID("1b0c7d0e-41a5-4f59-8a1e-6d2f3c4b5a69")


def wake_run_id(proposal_id: str) -> str:
    """The id of the run a proposal's outcome wakes (one per proposal)."""
    return uuid.uuid5(_WAKE, proposal_id).hex


def report_outcome(
    deps: EngineDeps, proposal: ActionProposal, status: str, *, result: Any = None,
    error: str | None = None, reason: str | None = None,
) -> str | None:
    """Post the outcome message; wake the agent when it asks for it. Returns the wake run's id, if one
    was started (or had been already)."""
    message = deliver_outcome(deps.store, proposal, status, result=result, error=error, reason=reason)
    run = deps.store.get_run(proposal.run_id) if proposal.run_id else None
    agent = deps.agents.get(run.agent) if run is not None else None
    if run is None or agent is None or not agent.wake_on_proposal_outcome:
        return None
    thread = deps.store.get_thread_by_id(proposal.thread_id)
    if thread is None:
        return None
    run_id = wake_run_id(proposal.id)
    try:
        start_run(deps, agent, input=str(message.content), thread_key=thread.key, owner=run.owner,
                  tenant=run.tenant, run_id=run_id, as_system=True)
    except (ConflictError, QuotaExceededError) as exc:
        log.info("lunora: proposal %s: not waking %r: %s", proposal.id, agent.name, exc)
        return None
    return run_id
