"""``Lunora``: the app object — agents, store, dispatcher, lock — and the two entry points the
workers call (``execute_step``, ``sweep``).

Example::

    app = Lunora.from_env(agents=[support])          # env: LUNORA_DATABASE_URL, CELERY_BROKER_URL, ...
    handle = app.agents.support.run(input="hi", thread_key="t1", owner="user-7")
    app.threads.messages("t1", viewer="user-7")
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.config import Settings
from lunora_jobs.engine.actions import PROPOSAL_ROUTE, TickReport, tick
from lunora_jobs.engine.approvals import send_event
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import Dispatcher, InProcessDispatcher, StepTask
from lunora_jobs.engine.events import EventBus, LocalEventBus, RedisEventBus
from lunora_jobs.engine.hooks import HookSet
from lunora_jobs.engine.keys import DEFAULT_PREFIX
from lunora_jobs.engine.locks import LocalLock, RedisLock, RunLock
from lunora_jobs.engine.pipeline import Engine, StepOutcome
from lunora_jobs.engine.registry import declare
from lunora_jobs.engine.sweep import SweepReport, sweep
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.governance import Quota, QuotaPolicy, checked_quotas
from lunora_jobs.models.base import Model
from lunora_jobs.pricing import PricingStore
from lunora_jobs.runtime.agents_client import AgentsNamespace
from lunora_jobs.runtime.approvals_api import ApprovalsAPI
from lunora_jobs.runtime.functions import call_function, missing_function
from lunora_jobs.runtime.governance_api import GovernanceAPI, governance_store
from lunora_jobs.runtime.project_path import ensure_cwd_on_path
from lunora_jobs.runtime.proposals_api import AuthorizeAction, ProposalsAPI, owner_only
from lunora_jobs.runtime.runs_api import RunsAPI
from lunora_jobs.runtime.telemetry_hooks import TelemetryHooks
from lunora_jobs.runtime.threads_api import ThreadsAPI
from lunora_jobs.scheduling import CronEntry, DueReport, Scheduler
from lunora_jobs.scheduling.retention import RetentionReport, purge_ledger
from lunora_jobs.store.base import AgentStore
from lunora_jobs.telemetry.steplog import StepLogHooks

DEFAULT_DISPATCHER = "workers.dispatch:CeleryDispatcher"
CHANNELS_ATTACH = "channels.replies:attach"
"""Loaded by name for an app whose agents declare ``on_inbound`` / ``on_email``: registers the
reply step kind and the hooks that post a channel run's answer back (``channels`` imports
``lunora_jobs``, never the other way round)."""


def import_path(path: str) -> Any:
    """Import ``"package.module:attr"``, finding modules in the working directory as ``celery -A`` does."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise ConfigurationError(
            f"{path!r} is not a 'package.module:attribute' path (e.g. 'myproject.agents:app')."
        )
    ensure_cwd_on_path()
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            f"cannot import {path!r}: {exc} (run from the directory that holds the package, or add it "
            "to PYTHONPATH)"
        ) from exc


class Lunora:
    """The app: registered agents over one store, dispatcher and run lock.

    Defaults (the embedded mode of DESIGN.md): SQLite under ``LUNORA_DATA_DIR`` (or
    ``database_url``), in-process dispatch (Celery when ``broker_url`` is given, loaded by name so
    ``lunora_jobs`` never imports Celery), a process-local lock (Redis when ``redis_url`` is given).
    ``functions`` maps the paths tools dispatch with ``ctx.run(path, args)`` to callables taking
    ``args``, or to Celery tasks (called with ``args`` as keyword arguments). ``model`` replaces
    every agent's model (the test harness uses it). ``crons``: cron entries (``cron_jobs()``) the
    app fires through ``app.scheduler``.
    ``authorize_action(actor, proposal) -> bool`` says who may see and decide the action proposals
    of independent-mode agents (default: only the owner of the run that proposed it).
    ``quotas``: usage limits per actor / tenant (``lunora_jobs.governance.Quota``): a run at a limit is
    refused at start and a running one stops at its next turn (``QuotaExceededError``).
    """

    def __init__(
        self,
        agents: Sequence[AgentDefinition] = (),
        *,
        database_url: str | None = None,
        broker_url: str | None = None,
        redis_url: str | None = None,
        store: AgentStore | None = None,
        dispatcher: Dispatcher | None = None,
        lock: RunLock | None = None,
        functions: Mapping[str, Callable[..., Any]] | None = None,
        settings: Settings | None = None,
        model: Model | None = None,
        redis_prefix: str = DEFAULT_PREFIX,
        events: EventBus | None = None,
        crons: Iterable[CronEntry] = (),
        authorize_action: AuthorizeAction = owner_only,
        quotas: Iterable[Quota] = (),
    ) -> None:
        self.settings = settings or Settings()
        checked = checked_quotas(quotas)  # before anything is opened
        registry: dict[str, AgentDefinition] = {}
        for agent in with_delegates(agents):
            if agent.name in registry and registry[agent.name] is not agent:
                raise ConfigurationError(f"two agents are named {agent.name!r}; agent names must be unique.")
            registry[agent.name] = agent
        self.registry = registry
        if store is None:
            from lunora_jobs.store.sql import create_store

            store = create_store(database_url or self.settings.resolved_database_url())
        self.store: AgentStore = store
        self.dispatcher: Dispatcher = dispatcher or (
            _load_dispatcher(broker_url, self.settings) if broker_url else InProcessDispatcher()
        )
        if isinstance(self.dispatcher, InProcessDispatcher) and not self.dispatcher.bound:
            self.dispatcher.bind(self._run_task)
        self.lock: RunLock = lock or (
            RedisLock.from_url(redis_url, prefix=redis_prefix) if redis_url else LocalLock()
        )
        self.functions: dict[str, Callable[..., Any]] = dict(functions or {})
        self.deps = EngineDeps(
            store=self.store, dispatcher=self.dispatcher, lock=self.lock, agents=self.registry,
            run_function=self.run_function, settings=self.settings, model_override=model,
            events=events or (RedisEventBus.from_url(redis_url, prefix=redis_prefix) if redis_url
                              else LocalEventBus()),
        )
        self.events: EventBus = self.deps.events
        """Live thread updates: ``app.events.subscribe(listener)`` (Redis pub/sub too with ``redis_url``)."""
        self.hooks: HookSet = self.deps.hooks
        """Observers around every step and run end: ``app.hooks.add(StepHooks subclass)``."""
        if any(agent.telemetry is not None for agent in registry.values()):
            # The agents' telemetry=; with none declared no hook is registered (no cost per step).
            self.hooks.add(TelemetryHooks(registry, self.store))
        if self.settings.step_log:
            self.hooks.add(StepLogHooks())
        self.engine = Engine(self.deps)
        self.agents = AgentsNamespace(self.deps, registry)
        self.threads = ThreadsAPI(self.store)
        self.runs = RunsAPI(self.deps)
        """Runs by id, owner-gated: ``get``, ``retry`` (resume a failed run from its failed step)."""
        self.approvals = ApprovalsAPI(self.deps, self.threads)
        if any(agent.on_inbound or agent.on_email is not None for agent in registry.values()):
            _attach_channels(self)
        self.scheduler = Scheduler(self.deps, embedded=isinstance(self.dispatcher, InProcessDispatcher))
        """Delayed runs and cron entries: ``run_after``, ``run_at``, ``cancel``, ``list``, ``register``."""
        self.scheduler.register(crons)
        self.proposals = ProposalsAPI(self.deps, authorize_action)
        """Action proposals of independent-mode agents: ``list``, ``get``, ``decide``."""
        if checked:
            self.deps.quotas = QuotaPolicy(checked, governance_store(self.store), self.deps.now)
        self.governance = GovernanceAPI(self.store, self.deps.now, self.deps.quotas)
        """Usage and estimated cost per actor, tenant, agent, model or UTC day: ``usage(...)``; where an
        actor or tenant stands against the quotas: ``quota_status(...)``."""

    def _run_task(self, task: StepTask) -> None:
        if task.kind == PROPOSAL_ROUTE:
            self.work_proposals()
        else:
            self.execute_step(task.run_id, task.step)

    @property
    def pricing(self) -> PricingStore:
        """Model prices on the app's store (``list_prices``, ``set_price``, ``delete_price``, ``price_at``);
        every usage row the app records is costed from them."""
        if not isinstance(self.store, PricingStore):
            raise ConfigurationError(
                f"{type(self.store).__name__} keeps no model prices; use SqlStore or InMemoryStore, or "
                "implement lunora_jobs.pricing.PricingStore on your store."
            )
        return self.store

    @classmethod
    def from_env(cls, agents: Sequence[AgentDefinition] = (), **overrides: Any) -> Lunora:
        """Build from the environment: ``LUNORA_DATABASE_URL``, ``CELERY_BROKER_URL``,
        ``LUNORA_REDIS_URL``, ``OPENAI_*`` (keyword arguments win over the environment)."""
        settings = overrides.pop("settings", None) or Settings()
        overrides.setdefault("database_url", settings.database_url)
        overrides.setdefault("broker_url", settings.broker_url)
        overrides.setdefault("redis_url", settings.redis_url)
        return cls(agents, settings=settings, **overrides)

    def run_function(self, path: str, args: dict[str, Any], idempotency_key: str | None = None) -> Any:
        """What ``ctx.run(path, args)`` calls: a registered function, else ``module:attr`` by import; a
        Celery task gets ``args`` as keyword arguments (``runtime/functions.py``)."""
        fn = self.functions.get(path)
        if fn is None:
            try:
                fn = import_path(path)
            except ConfigurationError:
                raise missing_function(path) from None
        return call_function(fn, path, args)

    def execute_step(self, run_id: str, step: str) -> StepOutcome:
        """Run (or replay) one step — what the worker's turn/tool tasks call."""
        return self.engine.execute(run_id, step)

    def send_event(self, run_id: str, event: dict[str, Any]) -> str:
        """Deliver an event to a (hibernated) run — the primitive approvals are built on.

        ``{"type": "approval", "call_id": ..., "approved": bool, "by": viewer}``; returns
        ``"applied"`` or ``"unchanged"``. Not owner-gated: ``app.approvals.resolve`` is.
        """
        return send_event(self.deps, run_id, event)

    def work_proposals(self, *, limit: int = 100) -> TickReport:
        """Expire overdue action proposals and execute the approved ones (and those whose worker
        died: lease recovery) — what the ``lunora.proposals`` task and beat's tick call."""
        return tick(self.deps, worker_id=self.deps.worker_id, lease_ms=self.settings.proposal_lease_ms,
                    limit=limit)

    def sweep(self, *, batch: int = 200, grace_ms: int = 30_000, budget: int = 2_000) -> SweepReport:
        """Re-dispatch stalled runs — what the beat-driven sweep task calls (see ``engine/sweep.py``)."""
        report = sweep(self.deps, batch=batch, grace_ms=grace_ms, budget=budget)
        if self.hooks and (report.dispatched or report.finished or report.failed):
            self.hooks.sweep_finished(len(report.dispatched), len(report.finished), len(report.failed))
        return report


    def declare_agents(self) -> None:
        """Record in the store that a live worker serves this app's agents (each worker process does
        it as it loads the app; the sweep renews it). A run whose agent no live worker declares fails
        with ``UnknownAgentError`` instead of hanging (``engine/registry.py``)."""
        declare(self.deps)

    def dispatch_due(self) -> DueReport:
        """Start the delayed runs and cron fires that came due — what beat's tick task calls."""
        return self.scheduler.dispatch_due()

    def purge_ledger(self, *, max_batches: int = 10) -> RetentionReport:
        """The retention pass (``LUNORA_RETENTION_DAYS``, ``LUNORA_RETENTION_BATCH``) — what beat's
        ``lunora.retention`` calls; a no-op report when retention is off."""
        days = self.settings.retention_days
        if days is None:
            return RetentionReport(0, 0, more=False)
        return purge_ledger(self.store, days=days, batch=self.settings.retention_batch,
                            now_ms=self.deps.now(), max_batches=max_batches)

    def close(self) -> None:
        """Stop the scheduler's ticker and release pooled database connections (the app is unusable
        afterwards)."""
        self.scheduler.stop()
        close = getattr(self.store, "close", None)
        if callable(close):
            close()


def with_delegates(agents: Sequence[AgentDefinition]) -> list[AgentDefinition]:
    """``agents`` and every agent their tools delegate to (``agent_as_tool``), transitively: a child
    run must find its agent registered on whichever worker runs it."""
    found: list[AgentDefinition] = []
    pending = list(agents)
    while pending:
        agent = pending.pop(0)
        if any(agent is known for known in found):
            continue
        found.append(agent)
        pending += [t.delegate for t in agent.tools.values() if t.delegate is not None]
    return found


def _attach_channels(app: Lunora) -> None:
    try:
        attach = import_path(CHANNELS_ATTACH)
    except ConfigurationError as exc:
        raise ConfigurationError(
            f"agents declaring on_inbound/on_email need the channels package ({exc}); install "
            "lunora-jobs[channels]."
        ) from exc
    attach(app)


def _load_dispatcher(broker_url: str, settings: Settings) -> Dispatcher:
    cls = import_path(settings.dispatcher or DEFAULT_DISPATCHER)
    dispatcher: Dispatcher = cls(broker_url=broker_url)
    return dispatcher


def load_app(path: str | None = None) -> Lunora:
    """The app named by ``path`` or env ``LUNORA_APP`` (``"myproject.agents:app"``, like Celery's ``-A``)."""
    target = path or Settings().app
    if not target:
        raise ConfigurationError(
            "LUNORA_APP is not set; point it at your app object, e.g. LUNORA_APP=myproject.agents:app."
        )
    app = import_path(target)
    if callable(app) and not isinstance(app, Lunora):
        app = app()  # a factory
    if not isinstance(app, Lunora):
        raise ConfigurationError(f"{target!r} is a {type(app).__name__}, not a Lunora app.")
    return app
