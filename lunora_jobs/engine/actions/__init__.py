"""Independent action approvals (``action_approval_mode="independent"``): the engine side.

A gated tool call of an independent-mode agent does not hibernate its run. Its tool step files an
*action proposal* (``store.proposals``: deterministic id, immutable input snapshot, scoped to tenant /
actor / thread) and answers the model that the action awaits approval, so the run keeps going. Then:

- ``decide`` records a human decision (the app authorizes the deciding actor first); an approval
  queues the work in the same row and asks the dispatcher for a ``proposal`` task, a rejection
  delivers a rejection message to the thread;
- ``execute_next`` is the worker: it leases the next queued proposal (``claim_next``), runs the tool
  with the proposal's stable idempotency key while a heartbeat renews the lease, delivers the outcome
  to the thread as a message (keyed by the proposal, so a repeat never duplicates it) and settles;
- ``tick`` is beat's: it expires due pending proposals (announcing each expiry to its thread once)
  and drains the queue, which also recovers the lease of a worker killed mid-execution (same
  idempotency key, generation + 1);
- ``report_outcome`` posts an outcome to the thread and, for agents declared with
  ``wake_on_proposal_outcome=True``, starts one new run with it.
"""

from lunora_jobs.engine.actions.decide import decide
from lunora_jobs.engine.actions.deliver import OUTCOME_KIND, outcome_message_key
from lunora_jobs.engine.actions.execute import ExecutionReport, execute_next
from lunora_jobs.engine.actions.outcome import report_outcome, wake_run_id
from lunora_jobs.engine.actions.propose import (
    PROPOSAL_ROUTE,
    PROPOSAL_STEP,
    Proposed,
    proposal_store,
    propose,
)
from lunora_jobs.engine.actions.tick import TickReport, tick

__all__ = [
    "OUTCOME_KIND",
    "PROPOSAL_ROUTE",
    "PROPOSAL_STEP",
    "ExecutionReport",
    "Proposed",
    "TickReport",
    "decide",
    "execute_next",
    "outcome_message_key",
    "proposal_store",
    "propose",
    "report_outcome",
    "tick",
    "wake_run_id",
]
