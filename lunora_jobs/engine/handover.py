"""A run ended: announce it and hand its thread to the next queued run (``on_concurrent_run="queue"``).

The queue is in the database (``agent_run_queue``), so it survives a restart: ``run_ended`` promotes
at once, and the sweep promotes from threads left free with a non-empty queue (a crash between a
run's end and the promotion) through ``promote_stalled``. A slot pointing at a run row that does not
exist yet belongs to a start in progress — unless the thread has not moved for ``STALE_SLOT_MS``
(that start crashed before creating its run).
"""

from __future__ import annotations

import json
from typing import Any

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.plan import plan_start
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.steps import message_key, user_position
from lunora_jobs.store.records import NewMessage, RunRecord

TERMINAL = frozenset({"completed", "failed", "cancelled"})
OPEN = ("queued", "running", "awaiting_input")
STALE_SLOT_MS = 60_000
ADMIT_ROUNDS = 4


def input_text(value: Any) -> str:
    """The user message text for a run input (non-strings as JSON)."""
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def user_message(run_id: str, value: Any) -> NewMessage:
    """The run's user message for input ``value``, keyed ``<run_id>:user:0``."""
    return NewMessage(key=message_key(run_id, "user", user_position()), role="user",
                      content=input_text(value), run_id=run_id)


def open_run(deps: EngineDeps, run: RunRecord) -> None:
    """Write the run's user message and mark its thread running (the caller dispatches next).

    The message is keyed ``<run_id>:user:0``: repeating this after a crash is harmless.
    """
    info = run_info(run)
    deps.store.append_message(run.thread_id, user_message(run.id, info.input))
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
        if run.status == "queued" and not store.transition_run_and_thread(
            run_id, ("queued",), thread_status="running", status="running",
        ):
            current = store.get_run(run_id)
            if current is None or current.status not in TERMINAL:
                return None  # another promoter started it just now
            store.dequeue_run(thread_id, run_id)  # cancelled under us: free the slot, next one
            store.release_thread(thread_id, run_id)
            continue
        if run.status in ("queued", "running"):
            # Also the repair of a promotion that died before dequeuing: both writes are idempotent.
            open_run(deps, run)
            agent = deps.agents.get(run.agent)
            reads = agent.memory_reads if agent is not None else ()
            deps.dispatcher.dispatch(plan_start(run_id, reads).dispatch)
        store.dequeue_run(thread_id, run_id)
        return run_id
    return None


def run_ended(deps: EngineDeps, run: RunRecord, status: str) -> None:
    """After a run's end was recorded (and its thread freed): announce it, wake the run's parent (a
    child run), dispatch the agent's post-run memory writes (a completed run with an owner), tell the
    hooks, start the next queued run."""
    info = run_info(run)
    deps.events.publish(info.thread_key, {"type": "status", "status": status, "run_id": run.id})
    if info.parent:  # a child run (agent_as_tool): wake the parent's wait on it (kinds/child.py)
        deps.dispatcher.dispatch([StepTask(info.parent["run_id"], info.parent["step"], "step")])
    agent = deps.agents.get(run.agent)
    if status == "completed" and run.owner and agent is not None and agent.memory_writes:
        # Post-run memory writes (memory:episode): best-effort, recovered by the sweep if their worker dies.
        deps.dispatcher.dispatch([StepTask(run.id, step, "memory") for step in agent.memory_writes])
    if deps.hooks:
        deps.hooks.run_finished(run, status)
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
        stale = run is None and deps.now() - thread.updated_at >= STALE_SLOT_MS
        if stale or (run is not None and run.status in TERMINAL):
            store.release_thread(thread_id, holder)
    return promote_next(deps, thread_id)
