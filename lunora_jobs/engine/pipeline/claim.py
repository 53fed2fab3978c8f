"""Stage 1 of a step: claim — read the run and claim the step's ledger row.

The kind reads the run (fused with the claim where the store can: one round trip for the run, the
claim and what the work needs), the generic checks run (a wait without its event waits, a run that
ended answers with the memo and starts nothing, the agent must be registered), then the kind's own
checks and its claim. The claim is one conditional upsert, so the database alone picks one winner
among concurrent deliveries: no lock is taken. Its outcome decides the rest of the trip:

- ``claimed``: the work runs;
- ``completed``: a redelivery — nothing re-runs, the kind says what to re-plan from the memo (so a
  successor lost with a crashed worker is dispatched again);
- ``exhausted`` / ``failed``: the step cannot run again — the run fails (the poison-step rule);
- ``busy``: another worker holds a live lease — this delivery stops here.

The run's recorded limits apply here too, from the run row already read (no extra round trip): a run
past the deadline its ``run_timeout_s`` set fails with ``RunTimeoutError`` instead of running the
step, and a run whose recorded ``max_attempts`` differs from the deployed agent's (a deploy changed
``retry=``) is held to the recorded one (rare: only then does the claim take another round trip).
"""

from __future__ import annotations

from dataclasses import replace

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.handover import OPEN, TERMINAL
from lunora_jobs.engine.kinds import RunFails, StepState
from lunora_jobs.engine.runinfo import recorded_deadline, recorded_max_attempts, timeout_error
from lunora_jobs.store.records import RunRecord, StepClaim


def claim(deps: EngineDeps, state: StepState) -> bool:
    """Read and claim; True when the work is to run. Sets ``state.status`` when the trip goes no
    further than planning (``replayed``, ``failed``) or stops here (``missing``, ``waiting``,
    ``replayed``/``skipped`` on an ended run, ``busy``)."""
    kind = state.kind
    kind.read(deps, state)
    run = state.run
    if run is None:
        state.status = "missing"
        return False
    deadline = recorded_deadline(run)
    if deadline is not None and run.status in OPEN and not kind.after_run_end and deps.now() > deadline:
        _time_out(deps, state, run, deadline)
        return False
    if state.claim is None:  # a claim made with the read already held every check below
        if kind.wait and state.event is None:
            state.status = "waiting"
            return False
        if run.status in TERMINAL and not kind.after_run_end:
            memo = deps.store.get_step(state.run_id, state.step)
            if memo is not None and memo.status == "completed":
                state.status, state.result = "replayed", memo.result
            else:
                state.status = "skipped"
            return False
        state.agent = deps.agent(run.agent)
        stop = kind.admit(deps, state)
        if stop is not None:
            state.status = stop
            return False
        kind.claim(deps, state)
    else:
        state.agent = deps.agent(run.agent)
    claimed = state.claim
    assert claimed is not None and state.agent is not None
    if claimed.outcome == "busy":
        claimed = state.claim = _reclaim_own(deps, state, claimed)
    limit = recorded_max_attempts(run) or state.agent.max_attempts
    if limit != state.agent.max_attempts:
        claimed = state.claim = _recorded_attempts(deps, state, claimed, limit)
    if claimed.outcome == "claimed":
        return True
    if claimed.outcome == "busy":
        state.status = "busy"
    elif claimed.outcome == "completed":
        state.status, state.result = "replayed", claimed.step.result
        state.after = kind.replan(deps, state)
    else:  # exhausted, failed
        assert state.agent is not None
        detail = f": {claimed.step.error}" if claimed.step.error else ""
        if claimed.outcome == "failed":
            error = f"step {state.step!r} failed{detail}"
        else:
            error = (f"StepExhaustedError: step {state.step!r} was attempted {claimed.step.attempt} times "
                     f"without finishing (max_attempts={limit}){detail}")
        state.status = "failed"
        state.after = RunFails(error)
    return False


def _reclaim_own(deps: EngineDeps, state: StepState, busy: StepClaim) -> StepClaim:
    """A ``busy`` answer against this process's own attempt that already ended (it raised, e.g. on a
    database error, and Celery retried the task here): re-claim at once rather than wait for the
    lease to lapse. A live attempt (still held here, or another process's) stays ``busy``."""
    ended = deps.leases.ended_generation(state.run_id, state.step)
    if ended is None or ended != busy.step.generation or state.agent is None:
        return busy
    return deps.store.reclaim_step(
        state.run_id, state.step, ended, owner=deps.worker_id, lease_ms=deps.lease_ms(state.agent),
        max_attempts=state.agent.max_attempts,
    )


def _time_out(deps: EngineDeps, state: StepState, run: RunRecord, deadline: int) -> None:
    """The run is past its deadline: it fails with ``RunTimeoutError`` instead of running the step
    (a claim the read already made is closed, so nothing stays leased)."""
    state.agent = deps.agent(run.agent)
    made = state.claim
    if made is not None and made.outcome == "claimed":
        deps.store.fail_step(state.run_id, state.step, made.step.generation, "RunTimeoutError: run timed out",
                             terminal=True)
    state.claim = None
    state.status = "failed"
    state.after = RunFails(timeout_error(run, deps.now() - deadline, f"before step {state.step!r}"))


def _recorded_attempts(deps: EngineDeps, state: StepState, claimed: StepClaim, limit: int) -> StepClaim:
    """Hold the claim to the run's recorded ``max_attempts`` (``limit``) where the deployed agent's
    differs: a step the deployed limit calls exhausted is claimed again under the recorded one, and
    a takeover past the recorded limit is the poison-step rule's ``exhausted`` (the row closed)."""
    assert state.agent is not None
    step = claimed.step
    if claimed.outcome == "exhausted" and step.attempt < limit:
        return deps.store.claim_step(state.run_id, state.step, owner=deps.worker_id,
                                     lease_ms=deps.lease_ms(state.agent), max_attempts=limit)
    if claimed.outcome == "claimed" and step.attempt > limit:
        deps.store.fail_step(state.run_id, state.step, step.generation,
                             f"StepExhaustedError: past max_attempts={limit}", terminal=True)
        return StepClaim("exhausted", replace(step, attempt=step.attempt - 1))
    return claimed
