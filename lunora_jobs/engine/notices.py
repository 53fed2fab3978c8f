"""Live notices of new messages: a step that wrote to its thread tells the thread's watchers.

A turn writes the assistant message (and the error answers of invalid calls); a tool step writes the
call's result. Once such a step completed, the engine publishes ``{"type": "messages", "run_id",
"step"}`` on the thread's channel (``events.EventBus``), and a live stream reads the messages after
the last one it sent. The notice carries no message: the database stays the record, and a lost notice
costs latency (the stream's slow re-read), never a message.

The notice goes out with the step's dispatch (``send``): after the completion's commit, and after the
enqueue of what follows, so the next step's worker never waits for it. When the dispatcher can carry a
PUBLISH for the event bus's Redis server (``PublishCarrier``: ``CeleryDispatcher`` on a Redis broker
that is also ``LUNORA_REDIS_URL``'s server), both go in ONE round trip; otherwise the notice is a
PUBLISH of its own after the enqueue. A step that dispatches nothing (a final turn, a tool whose
siblings are still running, a parked run) publishes its notice once the rest of its dispatch stage
is done. A run's start sends its ``running`` status event with its first dispatch the same way.

Example::

    notice = message_notice(run, "tool", "tool:search:c1")   # None for kinds that write no message
    send(deps, tasks, notice)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.events import Event, RedisEventBus
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.store.records import RunRecord

WRITES_MESSAGES = frozenset({"turn", "tool"})
"""The step kinds whose completion writes thread messages."""


@dataclass(frozen=True, slots=True)
class Notice:
    """The ``messages`` notice of a completed step, for the watchers of thread ``thread_key``."""

    thread_key: str
    event: Event


def message_notice(run: RunRecord, kind: str, step: str) -> Notice | None:
    """The notice of step ``step`` (of kind ``kind``) of ``run``, which completed; None when the kind
    writes no message or the run has no thread key."""
    if kind not in WRITES_MESSAGES:
        return None
    thread_key = run_info(run).thread_key
    if not thread_key:
        return None
    return Notice(thread_key, {"type": "messages", "run_id": run.id, "step": step})


def send(deps: EngineDeps, tasks: Sequence[StepTask], notice: Notice | None) -> None:
    """Enqueue ``tasks``, then publish ``notice``: one Redis round trip for both where the dispatcher
    carries the bus's PUBLISH, else the enqueue and then the notice's own PUBLISH. The notice goes
    out even when the enqueue raised (what the enqueue raised is raised)."""
    events = deps.events
    carry = getattr(deps.dispatcher, "dispatch_and_publish", None)
    if notice is None or not tasks or carry is None or not isinstance(events, RedisEventBus):
        try:
            if tasks:
                deps.dispatcher.dispatch(tasks)
        finally:
            publish(deps, notice)
        return
    prepared = events.prepare(notice.thread_key, notice.event)
    carried = False
    try:
        carried = carry(tasks, prepared)
    finally:
        if not carried:
            events.send(prepared)


def publish(deps: EngineDeps, notice: Notice | None) -> None:
    """Publish ``notice`` on its own (a step that dispatched nothing)."""
    if notice is not None:
        deps.events.publish(notice.thread_key, notice.event)
