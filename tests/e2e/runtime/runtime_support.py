"""A user's project module as LUNORA_APP would name it, plus a dispatcher loaded by name."""

from __future__ import annotations

from collections.abc import Sequence

from lunora_jobs import Lunora, define_agent
from lunora_jobs.engine.dispatch import StepTask

echo = define_agent(name="echo", instructions="Repeat the user.", model="offline")


def make_app() -> Lunora:
    """An app factory (LUNORA_APP may name a factory too)."""
    return Lunora([echo], store=_memory())


def _memory() -> object:
    from lunora_jobs.store import InMemoryStore

    return InMemoryStore()


app = make_app()


class NamedDispatcher:
    """Stands in for workers.dispatch:CeleryDispatcher when LUNORA_DISPATCHER names it."""

    def __init__(self, broker_url: str) -> None:
        self.broker_url = broker_url
        self.tasks: list[StepTask] = []

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        self.tasks.extend(tasks)

    def revoke(self, run_id: str) -> None:
        """Nothing to drop."""
