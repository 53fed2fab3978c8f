"""``app.agents.<name>``: start runs, read their status and results, cancel them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.approvals import send_event
from lunora_jobs.engine.cancel import cancel_run
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.start import RunHandle, start_run
from lunora_jobs.errors import NotFoundError
from lunora_jobs.runtime.result import RunResult, run_result
from lunora_jobs.store.records import RunRecord


class AgentClient:
    """The producer surface of one agent.

    Example::

        handle = app.agents.support.run(input="Refund my order", thread_key="t1", owner="user-7")
        app.agents.support.status(handle.id)          # "running" / "completed" / ...
        result = app.agents.support.wait(handle.id)   # RunResult
    """

    def __init__(self, deps: EngineDeps, agent: AgentDefinition) -> None:
        self._deps = deps
        self.definition = agent

    @property
    def name(self) -> str:
        """The agent's name."""
        return self.definition.name

    def run(
        self, input: Any = None, *, thread_key: str | None = None, owner: str | None = None,
        title: str | None = None, run_id: str | None = None, tenant: str | None = None,
        as_system: bool = False,
    ) -> RunHandle:
        """Start (or continue, when ``thread_key`` names an existing thread) a run; returns ``{id}``.

        With the in-process dispatcher the run has finished when this returns; with Celery it runs
        on the workers. Raises ``ConflictError`` if the thread has a run in flight (see
        ``on_concurrent_run``) or belongs to another owner; ``OwnerRequiredError`` when the thread
        has an owner and ``owner`` is None, unless ``as_system=True`` (trusted code acting on the
        owner's behalf); ``RunInputError`` for ``input=None``. ``tenant``: the verified tenant the run
        acts for (recorded on the run and its usage; governance groups by it).
        """
        return start_run(self._deps, self.definition, input=input, thread_key=thread_key, owner=owner,
                         title=title, run_id=run_id, tenant=tenant, as_system=as_system)

    def status(self, run_id: str) -> str:
        """The run's status: queued, running, awaiting_input, completed, failed or cancelled."""
        return self._run(run_id).status

    def result(self, run_id: str) -> RunResult | None:
        """The ``RunResult`` once the run is over, else None."""
        result = run_result(self._run(run_id), self.definition)
        return result if result.done else None

    def wait(self, run_id: str, timeout: float = 60.0, poll_s: float = 0.05) -> RunResult:
        """Poll the store until the run is over; raise ``TimeoutError`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            result = run_result(self._run(run_id), self.definition)
            if result.done:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(f"run {run_id!r} still {result.status} after {timeout}s; wait longer.")
            time.sleep(poll_s)

    def cancel(self, run_id: str) -> bool:
        """Cancel the run (thread → ``cancelled``); False when it had already ended."""
        self._run(run_id)
        return cancel_run(self._deps, run_id)

    def send_event(self, run_id: str, event: dict[str, Any]) -> str:
        """Deliver an event to a hibernated run: ``{"type": "approval", "call_id": ..., "approved": ...}``."""
        self._run(run_id)
        return send_event(self._deps, run_id, event)

    def _run(self, run_id: str) -> RunRecord:
        run = self._deps.store.get_run(run_id)
        if run is None or run.agent != self.name:
            raise NotFoundError(f"no run {run_id!r} of agent {self.name!r}")
        return run


class AgentsNamespace:
    """``app.agents``: attribute (``app.agents.support``) or item (``app.agents["support"]``) access."""

    def __init__(self, deps: EngineDeps, agents: dict[str, AgentDefinition]) -> None:
        self._clients = {name: AgentClient(deps, agent) for name, agent in agents.items()}

    def __getattr__(self, name: str) -> AgentClient:
        clients: dict[str, AgentClient] = self.__dict__.get("_clients", {})
        try:
            return clients[name]
        except KeyError:
            known = ", ".join(clients) or "none"
            raise AttributeError(f"no agent named {name!r}; registered: {known}") from None

    def __getitem__(self, name: str) -> AgentClient:
        client: AgentClient = getattr(self, name)
        return client

    def __iter__(self) -> Iterator[AgentClient]:
        return iter(self._clients.values())

    def __contains__(self, name: object) -> bool:
        return name in self._clients
