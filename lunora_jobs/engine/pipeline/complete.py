"""Stage 3 of a step: complete — record what the work produced, and read what the planner needs.

A completion is one write fenced by the claim's generation: the result, the messages, the usage and
the run/thread patches land together or not at all (retried across a database outage for up to
``LUNORA_COMPLETE_RETRY_S``, so a paid model call is recorded rather than run again), and a
worker whose lease was taken over writes nothing (neither does any step of a cancelled run: the
store refuses it). The ledger rows the planner asks for ride in the same round trip where the
store can. A failed attempt is recorded instead (the lease released for a retry, or the step closed
when no attempt is left). A redelivery of a completed step records nothing and only reads the rows
its re-plan needs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from lunora_jobs.engine.cancel import release_if_cancelled
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.fused import complete_and_read_ledger
from lunora_jobs.engine.kinds import NO_ROWS, ReplanTurn, Retry, RunFails, StepState

log = logging.getLogger(__name__)
T = TypeVar("T")
OUTAGE_FIRST_WAIT_S = 0.2
OUTAGE_MAX_WAIT_S = 2.0


def complete(deps: EngineDeps, state: StepState) -> None:
    """Record the step's work (or its failed attempt); set ``status``, ``after`` and ``ledger``."""
    store = deps.store
    claim, work = state.claim, state.work
    if claim is None or claim.outcome != "claimed":  # a replay: only the re-plan's rows
        if isinstance(state.after, ReplanTurn) and state.after.steps is None:
            state.ledger = store.list_steps(state.run_id)
        return
    row = claim.step
    if work is None:
        _record_failure(deps, state)
        return
    names = None if work.ledger is None else list(work.ledger)
    if work.ledger == NO_ROWS:
        done, ledger = _through_outage(deps, lambda: (
            store.complete_step(state.run_id, row.name, row.generation, work.completion), None))
    else:
        done, ledger = _through_outage(deps, lambda: complete_and_read_ledger(
            store, state.run_id, row.name, row.generation, work.completion, names))
    if not done:
        release_if_cancelled(deps, state.run_id, row.name, row.generation)
        state.status = "lost"
        return
    state.status, state.result, state.after = "completed", work.completion.result, work.then
    if work.ledger != NO_ROWS:
        state.ledger = ledger if ledger is not None else store.list_steps(state.run_id)


def _through_outage(deps: EngineDeps, write: Callable[[], T]) -> T:
    """``write()``, retried with backoff across a database outage for up to ``complete_retry_s``.

    The work is done (a model call paid for): giving up now would have the step run again once its
    lease lapses. The write is fenced by the claim's generation, so retrying it is safe: it lands
    only while nobody took the step over (the keeper renews the lease again once the database is
    back). Errors other than the store's ``transient_errors`` are raised at once."""
    transient: tuple[type[BaseException], ...] = getattr(deps.store, "transient_errors", ())
    deadline = time.monotonic() + deps.settings.complete_retry_s
    delay = OUTAGE_FIRST_WAIT_S
    while True:
        try:
            return write()
        except transient as exc:
            if time.monotonic() + delay > deadline:
                raise
            log.warning("lunora: recording a step's result failed (%s); retrying in %.1f s", exc, delay)
            time.sleep(delay)
            delay = min(delay * 2, OUTAGE_MAX_WAIT_S)


def _record_failure(deps: EngineDeps, state: StepState) -> None:
    claim = state.claim
    assert claim is not None and state.error is not None
    row = claim.step
    if state.final:
        deps.store.fail_step(state.run_id, row.name, row.generation, state.error, terminal=True)
        state.status = "failed"
        state.after = RunFails(f"step {row.name!r} failed after {row.attempt} attempt(s): {state.error}")
    elif not deps.store.fail_step(state.run_id, row.name, row.generation, state.error,
                                  retry_at=deps.now() + state.delay_ms if state.delay_ms else 0):
        state.status = "lost"
    else:  # the ledger holds the step until its backoff is over; the message says when to come back
        state.status = "retry"
        state.after = Retry(StepTask(state.run_id, row.name, state.kind.route, state.delay_ms / 1000))
