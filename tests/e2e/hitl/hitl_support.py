"""Agents, tools and a hand-cranked dispatcher for the approvals / cancel / concurrency / state tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from lunora_jobs import ToolContext, define_agent, tool
from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.dispatch import InProcessDispatcher, StepTask
from lunora_jobs.models.base import ModelTurn
from lunora_jobs.store.base import AgentStore
from lunora_jobs.testing import Harness, agent_harness

CHARGES: list[float] = []
"""Every execution of ``charge_card`` (the side effect a rejected call must never have)."""


@tool(needs_approval=lambda i: i["amount"] > 5000)
def charge_card(amount: float, ctx: ToolContext) -> str:
    """Charge the customer's saved card."""
    CHARGES.append(amount)
    return f"charged {amount}"


@tool
def lookup(query: str) -> str:
    """Look something up (no approval needed)."""
    return f"found {query}"


def billing_agent(**options: Any) -> AgentDefinition:
    """An agent with a gated ``charge_card`` and a free ``lookup``."""
    options.setdefault("tools", [charge_card, lookup])
    return define_agent(name=options.pop("name", "billing"), model="offline", **options)


class ManualDispatcher(InProcessDispatcher):
    """Queues tasks and runs them only when the test says so (``drain``) — a broker with a crank.

    Thread-safe, so several threads may dispatch (resolve, start) at once.
    """

    def __init__(self) -> None:
        super().__init__()
        self._guard = threading.Lock()
        self.revoked: list[str] = []

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        """Only queue."""
        with self._guard:
            self._queue.extend(tasks)
            self.dispatched.extend(tasks)

    def revoke(self, run_id: str) -> None:
        """Drop queued tasks of ``run_id`` and remember it was asked."""
        with self._guard:
            self.revoked.append(run_id)
        super().revoke(run_id)

    @property
    def pending(self) -> list[StepTask]:
        """Tasks waiting in the queue."""
        with self._guard:
            return list(self._queue)

    def drain(self, limit: int | None = None) -> int:
        """Run up to ``limit`` queued tasks (all, including ones they dispatch, when None)."""
        ran = 0
        while limit is None or ran < limit:
            with self._guard:
                if not self._queue:
                    return ran
                task = self._queue.popleft()
            assert self._runner is not None
            self._runner(task)
            ran += 1
        return ran


def manual_harness(
    agent: AgentDefinition, script: Sequence[ModelTurn], *, store: AgentStore | None = None,
    functions: dict[str, Callable[..., Any]] | None = None,
) -> tuple[Harness, ManualDispatcher]:
    """A harness whose steps run only when ``dispatcher.drain()`` is called."""
    dispatcher = ManualDispatcher()
    harness = agent_harness(agent, script=script, store=store, dispatcher=dispatcher, functions=functions)
    return harness, dispatcher


def live_leases(harness: Harness, run_id: str, now: int) -> list[str]:
    """Ledger rows of the run still holding a live lease."""
    return [s.name for s in harness.steps(run_id) if s.status == "running" and s.lease_expires_at > now]
