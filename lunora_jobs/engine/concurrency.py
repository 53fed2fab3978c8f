"""One run owns a thread at a time: admission under ``on_concurrent_run`` and the durable run queue.

The owner is the thread's ``active_run_id`` slot, taken with one conditional UPDATE
(``acquire_thread``), so two processes starting runs on one thread at the same instant yield exactly
one owner. A run that finds the slot taken is handled by its agent's policy:

- ``"reject"`` (default): ``ConflictError`` at once, nothing written for the loser;
- ``"replace"``: the in-flight run is cancelled (``cancel.cancel_run``) and the slot taken over;
- ``"queue"``: the run is stored with status ``queued`` and appended to ``agent_run_queue``; when the
  owner ends (``run_ended``), ``promote_next`` hands the slot to the oldest queued run. The queue is
  in the database, so it survives a restart; the sweep promotes from threads left free with a
  non-empty queue (a crash between a run's end and the promotion).

A slot pointing at a run that has ended (a crash between its last writes) is freed on the way. A slot
pointing at a run row that does not exist yet belongs to a start in progress — unless the thread has
not moved for ``STALE_SLOT_MS`` (that start crashed before creating its run).
"""

from __future__ import annotations

import json

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.plan import plan_start
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.steps import message_key, user_position
from lunora_jobs.errors import ConflictError
from lunora_jobs.store import wall_clock
from lunora_jobs.store.records import NewMessage, RunRecord, ThreadRecord

TERMINAL = frozenset({"completed", "failed", "cancelled"})
OPEN = ("queued", "running", "awaiting_input")
STALE_SLOT_MS = 60_000
ADMIT_ROUNDS = 4


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
        if run is None and now_ms(deps) - current.updated_at < STALE_SLOT_MS:
            pass  # a start in progress: its run row is being written
        elif run is None or run.status in TERMINAL:
            store.release_thread(thread.id, holder)  # an owner that died without letting go
            continue
        if policy == "queue":
            return False
        if policy == "replace" and run is not None:
            from lunora_jobs.engine.cancel import cancel_run

            cancel_run(deps, run.id, promote=False)
            continue
        raise ConflictError(
            f"thread {thread.key!r} already has run {holder!r} in flight; wait for it, cancel it, or "
            "declare the agent with on_concurrent_run='replace' or 'queue'."
        )
    raise ConflictError(f"thread {thread.key!r} kept being taken by other runs; retry the request.")


def open_run(deps: EngineDeps, run: RunRecord) -> None:
    """Write the run's user message and mark its thread running (the caller dispatches next).

    The message is keyed ``<run_id>:user:0``: repeating this after a crash is harmless.
    """
    info = run_info(run)
    text = info.input if isinstance(info.input, str) else json.dumps(info.input, default=str, sort_keys=True)
    user = NewMessage(key=message_key(run.id, "user", user_position()), role="user", content=text,
                      run_id=run.id)
    deps.store.append_message(run.thread_id, user)
    deps.store.patch_thread(run.thread_id, status="running")
    deps.events.publish(info.thread_key, {"type": "status", "status": "running", "run_id": run.id})


def promote_next(deps: EngineDeps, thread_id: str) -> str | None:
    """Start the oldest queued run of the thread if the thread is free; return its id.

    Safe to call from anywhere at any time: the slot is taken by the same conditional UPDATE as a
    start, and a queued run is moved to ``running`` by a compare-and-set, so it starts once.
    """
    store = deps.store
    for _ in range(ADMIT_ROUNDS):
        head = store.queued_runs(thread_id, limit=1)
        if not head:
            return None
        run_id = head[0]
        if not store.acquire_thread(thread_id, run_id):
            return None  # an owner is in flight; it promotes when it ends
        run = store.get_run(run_id)
        if run is None or run.status in TERMINAL:
            store.dequeue_run(thread_id, run_id)  # cancelled while it waited: next one
            store.release_thread(thread_id, run_id)
            continue
        if run.status == "queued" and not store.transition_run(run_id, ("queued",), status="running"):
            current = store.get_run(run_id)
            if current is None or current.status not in TERMINAL:
                return None  # another promoter started it just now
            store.dequeue_run(thread_id, run_id)  # cancelled under us: free the slot, next one
            store.release_thread(thread_id, run_id)
            continue
        if run.status in ("queued", "running"):
            # Also the repair of a promotion that died before dequeuing: both writes are idempotent.
            open_run(deps, run)
            deps.dispatcher.dispatch(plan_start(run_id).dispatch)
        store.dequeue_run(thread_id, run_id)
        return run_id
    return None


def run_ended(deps: EngineDeps, run: RunRecord, status: str) -> None:
    """After a run's end was recorded (and its thread freed): announce it, start the next queued run."""
    deps.events.publish(run_info(run).thread_key, {"type": "status", "status": status, "run_id": run.id})
    # Only agents declared with "queue" ever queue runs: an app without one skips the read (the
    # sweep still promotes on any thread, whichever app queued there).
    if any(agent.on_concurrent_run == "queue" for agent in deps.agents.values()):
        promote_next(deps, run.thread_id)


def promote_stalled(deps: EngineDeps, thread_id: str) -> str | None:
    """The sweep's repair of a thread with queued runs: free a slot held by a run that ended (or a
    start that died before writing its run), then promote. Returns the started run id, if any."""
    store = deps.store
    thread = store.get_thread_by_id(thread_id)
    if thread is None:
        return None
    holder = thread.active_run_id
    if holder is not None:
        run = store.get_run(holder)
        stale = run is None and now_ms(deps) - thread.updated_at >= STALE_SLOT_MS
        if stale or (run is not None and run.status in TERMINAL):
            store.release_thread(thread_id, holder)
    return promote_next(deps, thread_id)


def now_ms(deps: EngineDeps) -> int:
    """The store's clock (injectable in tests), else the wall clock."""
    clock = getattr(deps.store, "clock", None)
    return int(clock()) if callable(clock) else wall_clock()
