"""The proposal worker: lease the next approved proposal, run its tool once, deliver, settle.

Order matters for exactly-once under kills: the tool runs with the proposal's idempotency key
(stable across recoveries), the outcome message is appended under a key derived from the proposal
(a repeat is ignored), and only then is the proposal settled. A worker killed anywhere before the
settle leaves a lease that runs out; the next claim (generation + 1) repeats the same steps, and the
tool's dedupe on ``ctx.idempotency_key`` makes the side effect happen once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from lunora_jobs.engine.actions.lease import LeaseKeeper
from lunora_jobs.engine.actions.outcome import report_outcome
from lunora_jobs.engine.actions.propose import proposal_store
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.memo import LocatedCall
from lunora_jobs.engine.toolmemo import jsonable
from lunora_jobs.engine.toolrun import execute_tool
from lunora_jobs.models.base import ToolCall
from lunora_jobs.store.proposals import ActionProposal, ProposalLease

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ExecutionReport:
    """One proposal a worker executed: its id, how it ended (``succeeded`` | ``failed``), the claim's
    generation (1 on the first try, more after a recovery) and the settle outcome (``settled``, or
    ``lost`` when another worker took the lease over meanwhile)."""

    proposal_id: str
    status: str
    generation: int
    settle: str


def execute_next(deps: EngineDeps, *, worker_id: str, lease_ms: int) -> ExecutionReport | None:
    """Lease and execute the longest-due approved proposal (or an expired lease); None when none is due."""
    store = proposal_store(deps.store)
    lease = store.claim_next_action_proposal(worker_id, lease_ms)
    if lease is None:
        return None
    with LeaseKeeper(store, lease, lease_ms):
        status, result, error = _run(deps, lease)
        report_outcome(deps, lease.proposal, status, result=result, error=error)
    p = lease.proposal
    settled = store.settle_action_proposal(
        p.scope, p.id, lease.token, lease.generation, "succeeded" if status == "succeeded" else "failed",
        result=result, error=error,
    )
    if settled not in ("settled", "unchanged"):
        log.warning("lunora: proposal %s settled by another worker (ours: %s)", p.id, settled)
    return ExecutionReport(p.id, status, lease.generation, settled)


def _run(deps: EngineDeps, lease: ProposalLease) -> tuple[str, Any, str | None]:
    """Run the proposal's tool on its snapshot: ``(status, result, error)``; never raises for the tool."""
    p = lease.proposal
    run = deps.store.get_run(p.run_id) if p.run_id else None
    agent = deps.agents.get(run.agent) if run is not None else None
    if run is None or agent is None:
        return "failed", None, _missing(p, run is None)
    try:
        output = execute_tool(deps, run, agent, _located(p), p.idempotency_key)
    except Exception as exc:
        log.warning("lunora: proposal %s: tool %r raised %r", p.id, p.tool_name, exc)
        return "failed", None, f"{type(exc).__name__}: {exc}"
    return "succeeded", jsonable(output), None


def _located(p: ActionProposal) -> LocatedCall:
    card = p.card if isinstance(p.card, dict) else {}
    call_id = str(card.get("tool_call_id") or p.call_id)
    arguments = p.input if isinstance(p.input, dict) else {}
    return LocatedCall(turn=-1, index=0, call=ToolCall(call_id, p.tool_name, arguments))


def _missing(p: ActionProposal, no_run: bool) -> str:
    if no_run:
        return f"the run {p.run_id!r} that proposed it no longer exists"
    return ("the agent that proposed it is not registered in this worker's app; register it in the app "
            "named by LUNORA_APP on every worker")
