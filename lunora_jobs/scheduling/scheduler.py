"""``app.scheduler``: delayed runs (``run_after`` / ``run_at``), cron entries, and the due-time tick.

Delayed runs and cron fires are rows of ``agent_schedules`` — durable, never a broker ETA, so a
delay may be far longer than the broker's visibility timeout. Whoever calls ``dispatch_due`` claims
and fires what is due: beat's ``lunora.dispatch_due`` task every ``LUNORA_SCHEDULER_TICK`` seconds
(default 1) with Celery; in the embedded default (in-process dispatcher), a daemon thread of the app
that starts once the app has cron entries or schedules a run (``LUNORA_SCHEDULER_THREAD=false`` turns
it off; an embedded process restarted with delayed runs pending and no cron entries fires them at its
first ``run_after`` or ``app.dispatch_due()``). A run fires within one tick of its due time.

Example::

    sid = app.scheduler.run_after(300, support, {"input": "follow up", "thread_key": "t-1"})
    app.scheduler.cancel(sid)                  # True: it had not fired
    app.scheduler.list(status="pending")       # ScheduleRecord rows, soonest first
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.errors import ConfigurationError, NotFoundError
from lunora_jobs.scheduling.cron import CronEntry
from lunora_jobs.scheduling.due import DueDispatcher, DueReport
from lunora_jobs.store.records import ScheduleRecord

log = logging.getLogger(__name__)

RUN_KEYS = frozenset({"input", "thread_key", "owner", "title"})
# A changed timing re-plans every row but one being fired right now.
_REPLAN = ("pending", "orphaned", "cancelled", "failed")


class Scheduler:
    """Delayed runs and cron entries of one app (``app.scheduler``)."""

    def __init__(self, deps: EngineDeps, *, embedded: bool = False) -> None:
        self._deps = deps
        self._crons: dict[str, CronEntry] = {}
        self._synced: set[str] = set()
        self._due = DueDispatcher(deps, self._crons)
        self._embedded = embedded and deps.settings.scheduler_thread
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    # -- declaring -----------------------------------------------------------------------------
    def register(self, crons: Iterable[CronEntry]) -> None:
        """Add cron entries (a ``cron_jobs()`` set); their rows are written on the next tick."""
        for entry in crons:
            known = self._crons.get(entry.name)
            if known is not None and known != entry:
                raise ConfigurationError(f"two cron entries are named {entry.name!r}; names must be unique.")
            self._deps.agent(entry.agent)  # an entry for an agent this app lacks is a deployment mistake
            self._crons[entry.name] = entry
        if self._crons:
            self._wake()  # never for an app without schedules: no idle thread polling its database

    @property
    def crons(self) -> Mapping[str, CronEntry]:
        """The registered cron entries by name."""
        return dict(self._crons)

    def run_after(
        self, seconds: float, agent: AgentDefinition | str, run: Mapping[str, Any] | None = None,
        *, id: str | None = None,
    ) -> str:
        """Start a run of ``agent`` in ``seconds``; ``run`` holds the run's ``input`` and optional
        ``thread_key``, ``owner``, ``title``. Returns the schedule id (``id`` makes it idempotent)."""
        if not seconds >= 0:
            raise ConfigurationError(f"run_after: seconds must be zero or more, got {seconds!r}.")
        return self._add(self._deps.now() + int(seconds * 1000), agent, run, id)

    def run_at(
        self, when: datetime, agent: AgentDefinition | str, run: Mapping[str, Any] | None = None,
        *, id: str | None = None,
    ) -> str:
        """Start a run of ``agent`` at ``when`` (a time-zone-aware datetime); see ``run_after``."""
        if not isinstance(when, datetime) or when.tzinfo is None:
            raise ConfigurationError(
                f"run_at: give a time-zone-aware datetime (e.g. datetime(..., tzinfo=UTC)), got {when!r}."
            )
        return self._add(int(when.timestamp() * 1000), agent, run, id)

    def _add(
        self, due: int, agent: AgentDefinition | str, run: Mapping[str, Any] | None, id: str | None
    ) -> str:
        name = agent.name if isinstance(agent, AgentDefinition) else agent
        self._deps.agent(name)
        params = dict(run or {})
        unknown = set(params) - RUN_KEYS
        if unknown:
            raise ConfigurationError(
                f"unknown run option(s) {sorted(unknown)}; a scheduled run takes {sorted(RUN_KEYS)}."
            )
        if id is not None and id.startswith("cron:"):
            raise ConfigurationError(
                "schedule ids starting with 'cron:' belong to cron entries; pick another id."
            )
        row = self._deps.store.add_schedule(name, due, params, id=id)
        self._wake()
        return row.id

    # -- reading and cancelling ----------------------------------------------------------------
    def get(self, id: str) -> ScheduleRecord:
        """The schedule ``id``; ``NotFoundError`` when there is none."""
        row = self._deps.store.get_schedule(id)
        if row is None:
            raise NotFoundError(f"no schedule {id!r}; `lunora schedules list` shows them.")
        return row

    def list(
        self, *, status: str | None = None, agent: str | None = None, limit: int = 100
    ) -> list[ScheduleRecord]:
        """Schedules soonest first, optionally one status's (pending, fired, cancelled, ...) or agent's."""
        self._sync_crons()
        return self._deps.store.list_schedules(status=status, agent=agent, limit=limit)

    def cancel(self, id: str) -> bool:
        """Cancel a pending schedule before it fires: True if cancelled, False if it already fired
        or was cancelled. A cancelled cron entry stays off until its timing changes."""
        self.get(id)
        return self._deps.store.cancel_schedule(id)

    # -- firing --------------------------------------------------------------------------------
    def dispatch_due(self, *, limit: int = 100) -> DueReport:
        """Claim and fire every due schedule (what beat's tick calls); safe to run concurrently."""
        self._sync_crons()
        return self._due.run(limit=limit)

    def _sync_crons(self) -> None:
        """Write each registered entry's row once per process: a new entry gets its first fire, an
        entry whose timing changed (a deploy) is re-planned; an unchanged one keeps its next fire."""
        store = self._deps.store
        for name, entry in list(self._crons.items()):
            if name in self._synced:
                continue
            payload = entry.payload()
            row = store.get_schedule(entry.schedule_id)
            if row is None:
                store.add_schedule(entry.agent, entry.next_after(self._deps.now()), payload,
                                   id=entry.schedule_id, kind="cron")
            else:
                changed = not isinstance(row.payload, Mapping) or row.payload.get("timing") != entry.timing
                store.reset_schedule(entry.schedule_id, due_at=entry.next_after(self._deps.now()),
                                     payload=payload, from_statuses=_REPLAN if changed else ("orphaned",))
            self._synced.add(name)

    # -- the embedded ticker -------------------------------------------------------------------
    def _wake(self) -> None:
        if not self._embedded:
            return
        with self._lock:
            if self._ticker is None or not self._ticker.is_alive():
                self._stop.clear()
                self._ticker = threading.Thread(target=self._tick_loop, name="lunora-scheduler", daemon=True)
                self._ticker.start()

    def _tick_loop(self) -> None:
        tick = self._deps.settings.scheduler_tick
        while not self._stop.wait(tick):
            try:
                self.dispatch_due()
            except Exception:  # the next tick retries; a dead ticker would silently stop all schedules
                log.exception("lunora scheduler: tick failed")

    def stop(self) -> None:
        """Stop the embedded ticker thread (``app.close`` calls this)."""
        self._stop.set()
        ticker = self._ticker
        if ticker is not None:
            ticker.join(timeout=5)
