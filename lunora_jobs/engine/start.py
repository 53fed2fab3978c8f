"""Starting a run: thread, active-run slot, run row, user message, first dispatch.

The run row stores what later steps must not re-evaluate (``runinfo.py``): the thread key and the
system instructions, resolved here once (an ``instructions`` callable never runs again on replay).
The user message is keyed ``<run_id>:user:0``, so retrying a start that crashed half-way is harmless.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.plan import plan_start
from lunora_jobs.engine.runinfo import RunInfo
from lunora_jobs.engine.steps import message_key, user_position
from lunora_jobs.errors import ConflictError
from lunora_jobs.store.records import NewMessage, NewRun, ThreadRecord

TERMINAL = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True, slots=True)
class RunHandle:
    """What ``run`` returns: the run id (``handle.id``) and the thread it runs on."""

    id: str
    thread_key: str


def input_text(value: Any) -> str:
    """The user message text for a run input (non-strings as JSON)."""
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def start_run(
    deps: EngineDeps, agent: AgentDefinition, *, input: Any, thread_key: str | None = None,
    owner: str | None = None, title: str | None = None, run_id: str | None = None,
) -> RunHandle:
    """Create the run on its thread and dispatch its first step.

    Raises ``ConflictError`` when the thread has another run in flight and the agent's
    ``on_concurrent_run`` is ``"reject"`` (or ``"queue"``, which degrades to reject for now), or when
    the thread belongs to another owner.
    """
    store = deps.store
    run_id = run_id or uuid.uuid4().hex
    key = thread_key or f"thread-{run_id}"
    thread = store.ensure_thread(
        key, owner=owner, title=title, agent=agent.name, initial_state=agent.initial_state
    )
    _take_thread(deps, agent, thread, run_id)
    try:
        instructions = agent.resolve_instructions(
            {"run_id": run_id, "thread_key": key, "owner": owner, "input": input}
        )
        info = RunInfo(input, key, instructions, title)
        store.create_run(NewRun(run_id, thread.id, agent.name, info.to_json(), owner=owner, status="running"))
        user = message_key(run_id, "user", user_position())
        text = input_text(input)
        store.append_message(thread.id, NewMessage(key=user, role="user", content=text, run_id=run_id))
        store.patch_thread(thread.id, status="running")
    except BaseException:
        store.release_thread(thread.id, run_id)
        raise
    deps.dispatcher.dispatch(plan_start(run_id).dispatch)
    return RunHandle(run_id, key)


def _take_thread(deps: EngineDeps, agent: AgentDefinition, thread: ThreadRecord, run_id: str) -> None:
    store = deps.store
    if store.acquire_thread(thread.id, run_id):
        return
    active = thread.active_run_id or (store.get_thread_by_id(thread.id) or thread).active_run_id
    current = store.get_run(active) if active else None
    if current is None or current.status in TERMINAL:
        # A run that ended without freeing the slot (a crash between its last writes): free it.
        if active:
            store.release_thread(thread.id, active)
    elif agent.on_concurrent_run == "replace":
        cancel_run(deps, current.id)
    else:
        raise ConflictError(
            f"thread {thread.key!r} already has run {current.id!r} in flight; wait for it, cancel it, "
            "or declare the agent with on_concurrent_run='replace'."
        )
    if not store.acquire_thread(thread.id, run_id):
        raise ConflictError(f"thread {thread.key!r} was taken by another run just now; retry the request.")


def cancel_run(deps: EngineDeps, run_id: str) -> bool:
    """Stop a run: mark it cancelled, free its thread, drop its queued tasks. False if already over.

    Steps already executing finish their current work, but the engine refuses every later step of a
    cancelled run (it checks the run status before claiming).
    """
    store = deps.store
    run = store.get_run(run_id)
    if run is None or run.status in TERMINAL:
        return False
    store.update_run(run_id, status="cancelled", stopped="cancelled")
    store.patch_thread(run.thread_id, status="cancelled")
    store.release_thread(run.thread_id, run_id)
    deps.dispatcher.revoke(run_id)
    return True
