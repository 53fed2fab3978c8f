"""The seam between the ingress and the engine: ``RunStarter`` starts (or dedupes) a claimed event's run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from channels.inbound.event import ReplyTarget


@dataclass(frozen=True, slots=True)
class InboundRun:
    """A claimed inbound event, ready to start: which agent, with what, on whose behalf, reply where.

    ``dedupe_key`` is equal for every retry or redelivery of the same event (``slack:<team>:<event_id>``,
    ``github:<delivery>``, ``discord:<interaction id>``, ``email:<message id>``).
    """

    agent: str
    dedupe_key: str
    input: Any
    owner: str
    thread_key: str
    title: str | None = None
    reply: ReplyTarget | None = None
    tenant: str | None = None
    """``<channel>:<tenant>`` of the verified identity (Slack team, GitHub installation, Discord guild):
    recorded on the run and its usage, what governance groups and budgets by."""


@dataclass(frozen=True, slots=True)
class StartResult:
    """``started``: this call started the run. ``duplicate``: an earlier delivery of the same event
    did (or is doing it right now); nothing was started."""

    status: Literal["started", "duplicate"]
    run_id: str


class RunStarter(Protocol):
    """Starts runs for the ingress. It must return quickly (the run goes to the queue, it is never
    executed in the caller) and start nothing twice for one ``dedupe_key``, across processes.

    Raises ``ConflictError`` when the thread refuses the run (another owner, a run in flight under
    ``on_concurrent_run="reject"``); any other exception means "try again later".
    """

    def start(self, run: InboundRun) -> StartResult:
        """Start ``run`` unless its ``dedupe_key`` was claimed already."""
        ...
