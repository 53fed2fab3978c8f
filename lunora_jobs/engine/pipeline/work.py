"""Stage 2 of a step: work — the kind does the step's work, writing nothing.

What the work produced (the completion: result, messages, usage, run/thread patches) is recorded by
the next stage in one fenced write. When the work raises, the attempt failed: it is retried through
the ledger (the claim's ``attempt`` counts) under the retry policy the run recorded at its start
(the agent's ``retry=``: ``max_attempts``, after a backoff — ``engine/backoff.py``: exponential with
full jitter, or the server's Retry-After), unless the kind calls the error fatal or the policy gives
up on it (an HTTP 4xx other than its ``retry_statuses``, a ``give_up_on`` class); once no attempt is
left the kind may still answer (a tool's error becomes the model's tool result) — otherwise the run
fails.
"""

from __future__ import annotations

import logging

from lunora_jobs.engine.backoff import describe, next_delay_ms
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.kinds import StepState
from lunora_jobs.engine.runinfo import run_info

log = logging.getLogger(__name__)


def work(deps: EngineDeps, state: StepState) -> None:
    """Run the kind's work: sets ``state.work``, or ``state.error`` (and ``state.final``)."""
    agent, claim = state.agent, state.claim
    assert agent is not None and claim is not None
    try:
        state.work = state.kind.work(deps, state)
        return
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        recorded = run_info(state.run).retry if state.run is not None else None
        delay = None if state.kind.fatal(exc) else next_delay_ms(recorded or agent.retry, exc,
                                                                   claim.step.attempt)
        final, delay_ms = delay is None, delay or 0
        later = "" if final else f"; {describe(delay_ms, exc)}"
    if final:
        given = state.kind.give_up(deps, state, error)
        if given is not None:
            state.work = given
            return
    log.warning("lunora: step %s of run %s failed (attempt %d): %s%s", state.step, state.run_id,
                claim.step.attempt, error, later)
    state.error, state.final, state.delay_ms = error, final, delay_ms
