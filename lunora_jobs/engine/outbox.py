"""Starting is atomic: the transactional outbox of a run's first dispatch.

``start_run`` writes the run row, its user message (with the thread's status) and one outbox row per
first step in ONE transaction (``store.create_run(run, RunOpening(...))``): either all of it is
recorded or none of it, and ``run()`` raises. After the commit the start sends the dispatch
(``send_started``) and deletes the rows the broker took. If the broker is down, the send fails but the
run is durable and will start: ``run()`` still returns its handle, and the rows stay until the sweep
(beat's tick, once the broker is back) sends them (``drain_outbox``). A row sent twice (a start that
died between its send and its delete) is harmless: the step ledger's claim dedupes the second message.

An in-process dispatcher (the embedded default) runs the first step in ``run()`` itself: there is no
broker to lose it, so no outbox row is written for it. A row is left to its start for
``OUTBOX_GRACE_MS`` before the sweep sends it, and the sweep sends only its own app's agents' rows:
another app's workers may not know the agent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask, runs_inline
from lunora_jobs.engine.notices import Notice, publish, send
from lunora_jobs.store.records import OutboxEntry

log = logging.getLogger(__name__)

OUTBOX_GRACE_MS = 2_000
"""How old an outbox row is before the sweep sends it (its start normally deletes it within ms)."""


def outbox_entries(deps: EngineDeps, agent: str, tasks: Sequence[StepTask]) -> tuple[OutboxEntry, ...]:
    """The outbox rows of a start's first ``tasks`` (none for a dispatcher that runs them inline)."""
    if runs_inline(deps.dispatcher):
        return ()
    return tuple(OutboxEntry(task.run_id, task.step, task.kind, agent) for task in tasks)


def send_started(
    deps: EngineDeps, run_id: str, tasks: Sequence[StepTask], notice: Notice | None = None
) -> bool:
    """Send a started run's first dispatch (with ``notice``, its status event, riding along: see
    ``notices.send``) and delete its outbox rows. False when the dispatcher raised (a broker outage):
    the rows stay, the sweep sends them later, and the caller still returns the run's handle — the
    run is recorded and will execute. A dispatcher that runs the steps inline is simply called, after
    the notice: what it raises comes from running the run, not from sending it."""
    if not tasks or runs_inline(deps.dispatcher):
        publish(deps, notice)
        if tasks:
            deps.dispatcher.dispatch(tasks)
        return True
    try:
        send(deps, tasks, notice)
    except Exception as exc:  # any failure to send: the outbox row is the durable request
        log.warning("lunora: run %s is recorded but its first step was not sent (%s: %s); the sweep "
                    "sends it once the broker is reachable", run_id, type(exc).__name__, exc)
        return False
    try:
        deps.store.clear_outbox([(task.run_id, task.step) for task in tasks])
    except Exception as exc:  # sent; a row left behind is only sent again, and deduped by the ledger
        log.warning("lunora: run %s: could not delete its sent outbox rows (%s); the sweep re-sends "
                    "them harmlessly", run_id, exc)
    return True


def drain_outbox(deps: EngineDeps, agents: Sequence[str], limit: int) -> list[StepTask]:
    """The sweep's part: send the outbox rows of ``agents`` older than ``OUTBOX_GRACE_MS`` (one
    indexed read, then one send and one delete) and return what it sent. A send that fails leaves
    the rows for the next tick."""
    rows = deps.store.due_outbox(deps.now() - OUTBOX_GRACE_MS, agents=agents, limit=limit)
    if not rows:
        return []
    tasks = [StepTask(row.run_id, row.step, row.kind) for row in rows]
    try:
        deps.dispatcher.dispatch(tasks)
    except Exception as exc:
        log.warning("lunora sweep: %d outbox rows not sent (%s: %s); next tick retries",
                    len(tasks), type(exc).__name__, exc)
        return []
    deps.store.clear_outbox([(task.run_id, task.step) for task in tasks])
    return tasks
