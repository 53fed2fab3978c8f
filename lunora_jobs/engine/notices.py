"""Live notices of new messages: a ``StepHooks`` that tells a thread's watchers a step wrote to it.

A turn writes the assistant message (and the error answers of invalid calls); a tool step writes the
call's result. Once such a step completed, ``MessageNotices`` publishes ``{"type": "messages",
"run_id", "step"}`` on the thread's channel (``events.EventBus``), and a live stream reads the
messages after the last one it sent. The notice carries no message: the database stays the record,
and a lost notice costs latency (the stream's slow re-read), never a message.

The ``Lunora`` app registers it on its hooks, so every process that runs steps announces them.

Example::

    app.hooks.add(MessageNotices(app.events))   # done by Lunora(...) itself
"""

from __future__ import annotations

from lunora_jobs.engine.events import EventBus
from lunora_jobs.engine.hooks import StepHooks, StepInfo

WRITES_MESSAGES = frozenset({"turn", "tool"})
"""The step kinds whose completion writes thread messages."""


class MessageNotices(StepHooks):
    """Publishes a ``messages`` notice after each completed turn or tool step."""

    def __init__(self, events: EventBus) -> None:
        self.events = events

    def step_finished(self, step: StepInfo, status: str) -> None:
        """Announce the messages a completed turn or tool step wrote (after its commit)."""
        if status == "completed" and step.kind in WRITES_MESSAGES and step.thread_key:
            notice = {"type": "messages", "run_id": step.run_id, "step": step.step}
            self.events.publish(step.thread_key, notice)
