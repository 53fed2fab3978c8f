"""Starting a run: thread, active-run slot (or the queue), then in ONE transaction the run row, its user
message and its first dispatch's outbox row (or its queue row); then the dispatch is sent.

``run()`` either returns a handle whose run will execute, or raises with no run recorded: a broker
that refuses the first dispatch only delays the run (``engine/outbox.py``).

The run row stores what later steps must not re-evaluate (``runinfo.py``): the thread key and the
system instructions, resolved here once (an ``instructions`` callable never runs again on replay).
The user message is keyed ``<run_id>:user:0``, so retrying a start that crashed half-way is harmless.
Who may own the thread is decided by ``admission.admit`` (the ``on_concurrent_run`` policies).

A store with ``create_run_on_free_thread`` (``SqlStore`` on PostgreSQL) is first asked to do the
thread's get-or-create, the taking of its slot and the run's transaction in ONE statement, taken
only when the thread is free (no run in flight or queued, the same owner): two round trips fewer
before the first dispatch. That is tried when preparing the run writes nothing and calls no user
code (static instructions, no telemetry) and the run id is new; otherwise, or when the thread is not
free, the start goes the plain way below.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.admission import admit
from lunora_jobs.engine.cancel import cancel_run
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.handover import input_text, promote_next, user_message
from lunora_jobs.engine.notices import Notice
from lunora_jobs.engine.outbox import outbox_entries, send_started
from lunora_jobs.engine.plan import plan_start
from lunora_jobs.engine.runinfo import RunInfo, run_info
from lunora_jobs.engine.shape import agent_shape
from lunora_jobs.errors import OwnerRequiredError, RunInputError
from lunora_jobs.store.records import NewRun, RunOpening
from lunora_jobs.telemetry.base import RunStart, start_trace

TERMINAL = frozenset({"completed", "failed", "cancelled"})

__all__ = ["TERMINAL", "RunHandle", "cancel_run", "input_text", "start_run"]


@dataclass(frozen=True, slots=True)
class RunHandle:
    """What ``run`` returns: the run id (``handle.id``) and the thread it runs on."""

    id: str
    thread_key: str


def start_run(
    deps: EngineDeps, agent: AgentDefinition, *, input: Any, thread_key: str | None = None,
    owner: str | None = None, title: str | None = None, run_id: str | None = None,
    tenant: str | None = None, as_system: bool = False, parent: dict[str, str] | None = None,
) -> RunHandle:
    """Create the run on its thread and dispatch its first step — or queue it.

    With another run in flight on the thread, the agent's ``on_concurrent_run`` decides:
    ``"reject"`` raises ``ConflictError``, ``"replace"`` cancels the in-flight run and takes over,
    ``"queue"`` stores this run as ``queued``; it starts when the runs ahead of it have ended.
    Starting again with the ``run_id`` of an existing run is a replay, never a concurrent run: it
    returns that run's handle and starts nothing. ``ConflictError`` too when the thread belongs to
    another owner (owners are immutable). ``tenant``: the verified tenant the run acts for, recorded
    on the run and its usage rows (what governance groups and budgets by).
    ``OwnerRequiredError`` (a ``ConflictError``) when the thread has an owner and ``owner`` is
    None, unless ``as_system`` says trusted code acts on the owner's behalf.
    ``RunInputError`` for ``input=None`` (it used to be stored as the message ``"null"``).
    ``parent``: ``{"run_id", "step"}`` of the run that delegated this one (``engine/children.py``).
    ``QuotaExceededError`` (``QuotaUnavailableError`` when usage cannot be read) before anything is
    written, when the app has quotas and the run's actor or tenant is at a limit.
    """
    if input is None:
        raise RunInputError(
            f"agent {agent.name!r}: input=None is not a run input; pass the user message as input=... "
            "(a string or any JSON-able value)"
        )
    store = deps.store
    fresh = run_id is None
    if run_id is not None:
        existing = store.get_run(run_id)
        if existing is not None:
            return RunHandle(run_id, run_info(existing).thread_key)
    run_id = run_id or uuid.uuid4().hex
    key = thread_key or f"thread-{run_id}"
    if deps.quotas is not None:
        actor = owner
        if actor is None and as_system:  # the run will be recorded as the thread owner's
            existing_thread = store.get_thread(key)
            actor = None if existing_thread is None else existing_thread.owner
        deps.quotas.enforce(actor, tenant)
    fused = getattr(store, "create_run_on_free_thread", None)
    if fresh and callable(fused) and _prepares_purely(agent):
        first = tuple(plan_start(run_id, agent.memory_reads).dispatch)
        info = _run_info(deps, agent, run_id, key, input, owner, title, parent)
        opening = RunOpening(message=user_message(run_id, input), thread_status="running",
                             outbox=outbox_entries(deps, agent.name, first))
        # ``thread_id`` is not read: the run goes on the thread of ``key``.
        run = NewRun(run_id, "", agent.name, info.to_json(), owner=owner, tenant=tenant)
        if fused(key, run, opening, title=title, initial_state=agent.initial_state) is not None:
            _send_first(deps, key, run_id, first)
            return RunHandle(run_id, key)
    thread = store.ensure_thread(
        key, owner=owner, title=title, agent=agent.name, initial_state=agent.initial_state
    )
    if thread.owner is not None and owner is None and not as_system:
        # Checked on the thread ensure_thread returned, so a thread owned a moment ago is caught too.
        raise OwnerRequiredError(
            f"thread {key!r} has an owner and this run names none; pass owner=<its owner>, or "
            "as_system=True if trusted server code continues it on the owner's behalf"
        )
    if as_system and owner is None:
        owner = thread.owner  # the run is recorded as the owner's, like an admin's start through the API
    owns = admit(deps, agent, thread, run_id)
    first = tuple(plan_start(run_id, agent.memory_reads).dispatch) if owns else ()
    try:
        info = _run_info(deps, agent, run_id, key, input, owner, title, parent)
        # One transaction: the run, and its user message + thread status + first dispatch (the
        # outbox, engine/outbox.py) or its place in the queue. All recorded, or nothing and we raise.
        opening = RunOpening(enqueue=True)
        if owns:
            opening = RunOpening(
                message=user_message(run_id, input), thread_status="running",
                outbox=outbox_entries(deps, agent.name, first),
            )
        store.create_run(NewRun(
            run_id, thread.id, agent.name, info.to_json(), owner=owner, tenant=tenant,
            status="running" if owns else "queued",
        ), opening)
    except BaseException:
        if owns:
            store.release_thread(thread.id, run_id)
        raise
    if owns:
        _send_first(deps, key, run_id, first)
    else:
        promote_next(deps, thread.id)  # the owner may have ended between our check and our enqueue
    return RunHandle(run_id, key)


def _prepares_purely(agent: AgentDefinition) -> bool:
    """Whether preparing a run of ``agent`` (``_run_info``) calls no user code and records nothing,
    so it may run before the thread is known to be free: static instructions, no telemetry."""
    texts = [agent.instructions, *(getattr(skill, "instructions", "") for skill in agent.skills)]
    return agent.telemetry is None and not any(callable(text) for text in texts)


def _run_info(
    deps: EngineDeps, agent: AgentDefinition, run_id: str, key: str, input: Any, owner: str | None,
    title: str | None, parent: dict[str, str] | None,
) -> RunInfo:
    """What the run row records for later steps: the resolved instructions, the trace carrier, the
    agent's shape and the run's deadline."""
    context = {"run_id": run_id, "thread_key": key, "owner": owner, "input": input}
    instructions = agent.resolve_instructions(context)
    trace = None
    if agent.telemetry is not None:  # the carrier every step of the run is parented on
        trace = start_trace(agent.telemetry, RunStart(
            run_id, agent.name, key, owner, input if agent.telemetry.record_inputs else None
        ))
    shape = agent_shape(agent)  # what a deploy mid-run is compared with (engine/shape.py)
    timeout_ms = None if agent.run_timeout_s is None else int(agent.run_timeout_s * 1000)
    return RunInfo(input, key, instructions, title, trace, shape.version, shape.tools, parent,
                   agent.retry, timeout_ms, None if timeout_ms is None else deps.now() + timeout_ms)


def _send_first(deps: EngineDeps, key: str, run_id: str, first: tuple[StepTask, ...]) -> None:
    # A broker outage only delays the run: the sweep sends it. The status event rides along.
    running = Notice(key, {"type": "status", "status": "running", "run_id": run_id})
    send_started(deps, run_id, first, running)
