"""One run owns a thread at a time: admission under ``on_concurrent_run``.

The owner is the thread's ``active_run_id`` slot, taken with one conditional UPDATE
(``acquire_thread``), so two processes starting runs on one thread at the same instant yield exactly
one owner. A run that finds the slot taken is handled by its agent's policy:

- ``"reject"`` (default): ``ConflictError`` at once, nothing written for the loser;
- ``"replace"``: the in-flight run is cancelled (``cancel.cancel_run``) and the slot taken over;
- ``"queue"``: the run is stored with status ``queued`` and appended to ``agent_run_queue``; when the
  owner ends, ``handover.run_ended`` hands the slot to the oldest queued run.

A slot pointing at a run that has ended (a crash between its last writes) is freed on the way. A slot
pointing at a run row that does not exist yet belongs to a start in progress — unless the thread has
not moved for ``STALE_SLOT_MS`` (that start crashed before creating its run).
"""

from __future__ import annotations

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.cancel import cancel_run
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.handover import ADMIT_ROUNDS, STALE_SLOT_MS, TERMINAL
from lunora_jobs.errors import ConflictError
from lunora_jobs.store.records import ThreadRecord


def admit(deps: EngineDeps, agent: AgentDefinition, thread: ThreadRecord, run_id: str) -> bool:
    """Take the thread for ``run_id`` (True), or say it must queue (False, policy ``"queue"``).

    Raises ``ConflictError`` under ``"reject"`` when another run is in flight. Re-admitting the run
    that already owns the thread succeeds (a replay is never a concurrent run).
    """
    store = deps.store
    policy = agent.on_concurrent_run
    if policy == "queue" and store.queued_runs(thread.id, limit=1):
        return False  # others arrived first and wait: join the end of the line
    for _ in range(ADMIT_ROUNDS):
        if store.acquire_thread(thread.id, run_id):
            return True
        current = store.get_thread_by_id(thread.id)
        holder = None if current is None else current.active_run_id
        if current is None or holder is None:
            continue  # freed meanwhile: try again
        run = store.get_run(holder)
        if run is None and deps.now() - current.updated_at < STALE_SLOT_MS:
            pass  # a start in progress: its run row is being written
        elif run is None or run.status in TERMINAL:
            store.release_thread(thread.id, holder)  # an owner that died without letting go
            continue
        if policy == "queue":
            return False
        if policy == "replace" and run is not None:
            cancel_run(deps, run.id, promote=False)
            continue
        raise ConflictError(
            f"thread {thread.key!r} already has run {holder!r} in flight; wait for it, cancel it, or "
            "declare the agent with on_concurrent_run='replace' or 'queue'."
        )
    raise ConflictError(f"thread {thread.key!r} kept being taken by other runs; retry the request.")
