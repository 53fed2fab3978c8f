"""What a step needs besides ``(run_id, step)``: the store, the dispatcher, the lock, the agents.

One ``EngineDeps`` is built by the ``Lunora`` app (or the test harness) and shared by every step a
process runs; it holds no per-run state.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.config import Settings
from lunora_jobs.engine.dispatch import Dispatcher
from lunora_jobs.engine.events import EventBus, LocalEventBus
from lunora_jobs.engine.hooks import HookSet
from lunora_jobs.engine.leases import LeaseKeeper
from lunora_jobs.engine.locks import RunLock
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.governance import QuotaPolicy
from lunora_jobs.models.base import Model
from lunora_jobs.models.registry import resolve_model
from lunora_jobs.store import wall_clock
from lunora_jobs.store.base import AgentStore

FunctionRunner = Callable[[str, dict[str, Any], "str | None"], Any]
"""``runner(path, args, idempotency_key)``: what ``ctx.run`` calls."""


def default_worker_id() -> str:
    """``host:pid:random`` — the lease owner written into claimed ledger rows."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass
class EngineDeps:
    """The collaborators of the durable loop.

    ``model_override`` (the harness) replaces every agent's model; ``lease_margin_s`` is added to an
    agent's ``step_timeout_s`` to cap the lease (see ``lease_ms``).
    """

    store: AgentStore
    dispatcher: Dispatcher
    lock: RunLock
    agents: Mapping[str, AgentDefinition]
    run_function: FunctionRunner
    settings: Settings = field(default_factory=Settings)
    model_override: Model | None = None
    worker_id: str = field(default_factory=default_worker_id)
    lock_wait_s: float = 5.0
    lease_margin_s: float = 30.0
    events: EventBus = field(default_factory=LocalEventBus)
    """Where live thread updates go (state changes, run status): see ``events.py``."""
    hooks: HookSet = field(default_factory=HookSet)
    """Observers called around every step and at every run's end: see ``hooks.py``."""
    quotas: QuotaPolicy | None = None
    """The app's quotas, checked at a run's start and before each turn; None (no quota): no check."""
    leases: LeaseKeeper = field(init=False, repr=False)
    """Keeps the leases of this process's running steps alive (renewing them in ``store``)."""
    _models: dict[str, Model] = field(default_factory=dict, repr=False)
    _instances: dict[int, Model] = field(default_factory=dict, repr=False)
    """Model instances given as options, by id: ``isinstance`` against the ``Model`` Protocol walks
    its members on every call, so each instance is checked once, not on every turn."""
    registry_checked_at: int = field(default=0, repr=False, compare=False)
    """When this process's sweep last declared its agents and looked for undeclared runs
    (``engine/registry.py`` does that a few times per ``LUNORA_UNKNOWN_AGENT_S``, not every tick)."""

    def __post_init__(self) -> None:
        # Through ``self.store`` at call time: a test may swap the store after building the deps.
        self.leases = LeaseKeeper(lambda run_id, step, generation, lease_ms: self.store.renew_lease(
            run_id, step, generation, lease_ms))

    def agent(self, name: str) -> AgentDefinition:
        """The agent registered as ``name``; a run of an unknown agent is a deployment mistake."""
        try:
            return self.agents[name]
        except KeyError:
            raise ConfigurationError(
                f"No agent named {name!r} is registered in this process; pass it to Lunora(agents=[...]) "
                "in the app named by LUNORA_APP on every worker."
            ) from None

    def now(self) -> int:
        """Epoch ms from the store's clock (injectable in tests), else the wall clock."""
        clock = getattr(self.store, "clock", None)
        return int(clock()) if callable(clock) else wall_clock()

    def lease_ms(self, agent: AgentDefinition) -> int:
        """How long a claim holds a step before another worker may take it over, unless renewed:
        ``LUNORA_LEASE_S``, or the agent's ``step_timeout_s`` + margin when that is shorter. The
        process renews it while the step runs (``leases``), so a live step keeps it."""
        return int(min(agent.step_timeout_s + self.lease_margin_s, self.settings.lease_s) * 1000)

    def model_for(self, agent: AgentDefinition) -> Model:
        """The agent's model, built once per process (clients are reused across turns)."""
        if self.model_override is not None:
            return self.model_override
        return self.resolve(f"agent:{agent.name}", agent.model)

    def resolve(self, cache_key: str, spec: Any) -> Model:
        """Resolve a model option (string, Model, callable) once per ``cache_key``."""
        known = self._instances.get(id(spec))
        if known is not None and known is spec:
            return known
        if isinstance(spec, Model) and not isinstance(spec, str):
            self._instances[id(spec)] = spec  # held here, so its id is not reused by another object
            return spec
        model = self._models.get(cache_key)
        if model is None:
            model = resolve_model(spec, self.settings)
            self._models[cache_key] = model
        return model
