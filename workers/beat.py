"""Celery beat's schedule: the sweep tick, plus what the user's app supports — the due-schedules
tick and a wake-up per cron entry (added when beat starts, from ``LUNORA_APP``).

Run one beat replica (``lunora beat``). The sweep re-enqueues runs whose next step has no live lease
(a message lost in the broker, a worker killed before it acknowledged), so it only needs to be
frequent enough to bound that delay. Delayed runs live in the database (``agent_schedules``), never
in a broker ETA, which the worker that fetched it holds: lost with that worker, or redelivered again
and again when longer than a visibility timeout.

Delayed runs and cron fires are claimed in the database by the ``lunora.dispatch_due`` tick, so two
beats by mistake still fire each occurrence once.

Configuration: ``LUNORA_SWEEP_INTERVAL`` (seconds, default 5) and ``LUNORA_SCHEDULER_TICK``
(seconds, default 1), through ``Settings``.

Example::

    from workers.beat import beat_schedule
    beat_schedule()["lunora-sweep"]   # {"task": "lunora.sweep", "schedule": 5.0, ...}
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from celery import signals

from lunora_jobs.config import Settings
from lunora_jobs.scheduling import CronEntry
from workers.app_loader import get_app
from workers.cron_schedule import EntrySchedule

log = logging.getLogger(__name__)

def sweep_interval_s() -> float:
    """Seconds between sweep ticks (``LUNORA_SWEEP_INTERVAL``, default 5)."""
    return Settings().sweep_interval


MIN_TICK_EXPIRY_S = 5.0


def _tick(task: str, every: float) -> dict[str, Any]:
    # A tick that waited in the queue too long is dropped (``expires``): the next one does the same
    # work, and a backlog of stale ticks would only slow the workers down. Never less than a few
    # seconds, though: a busy worker must not discard every tick of a fast schedule.
    return {"task": task, "schedule": every, "options": {"expires": max(every, MIN_TICK_EXPIRY_S)}}


def beat_schedule(interval: float | None = None) -> dict[str, dict[str, Any]]:
    """The fixed entries: the sweep, every ``interval`` seconds (env ``LUNORA_SWEEP_INTERVAL``), and the
    retention pass every ``LUNORA_RETENTION_TICK`` seconds when ``LUNORA_RETENTION_DAYS`` is set."""
    every = interval if interval is not None else sweep_interval_s()
    entries = {"lunora-sweep": _tick("lunora.sweep", every)}
    settings = Settings()
    if settings.retention_days is not None:  # off by default: no tick at all
        entries["lunora-retention"] = _tick("lunora.retention", settings.retention_tick)
    return entries


def scheduler_tick_s() -> float:
    """Seconds between due-schedule ticks (``LUNORA_SCHEDULER_TICK``, default 1)."""
    return Settings().scheduler_tick


def app_entries(lunora_app: Any, interval: float | None = None) -> dict[str, dict[str, Any]]:
    """Entries that depend on what the user's app supports: the due-schedules tick (when the app has
    ``dispatch_due``, every ``LUNORA_SCHEDULER_TICK`` seconds), the action-proposal tick (when an agent
    uses independent approvals, every ``interval`` / ``LUNORA_SWEEP_INTERVAL`` seconds) and one wake-up
    per cron entry it declares (``app.scheduler.crons``), so ``celery beat`` lists them."""
    entries: dict[str, dict[str, Any]] = {}
    every = interval if interval is not None else sweep_interval_s()
    if callable(getattr(lunora_app, "dispatch_due", None)):
        due_every = interval if interval is not None else scheduler_tick_s()
        entries["lunora-dispatch-due"] = _tick("lunora.dispatch_due", due_every)
    registry = getattr(lunora_app, "registry", {})
    if any(getattr(a, "action_approval_mode", None) == "independent" for a in registry.values()):
        entries["lunora-proposals"] = _tick("lunora.proposals_tick", every)
    scheduler = getattr(lunora_app, "scheduler", None)
    crons = getattr(scheduler, "crons", None)
    if crons:
        entries.update(cron_entries(crons.values()))
    return entries


def cron_entries(declared: Iterable[CronEntry]) -> dict[str, dict[str, Any]]:
    """Beat entries for cron entries: each wakes ``lunora.dispatch_due`` at the entry's fire times.

    The fire itself is the database claim of the entry's ``agent_schedules`` row (its next fire and
    last fire live there), so two beats, or a wake-up and the regular tick, start one run per fire.
    """
    return {
        f"lunora-cron:{entry.name}": {
            "task": "lunora.dispatch_due", "schedule": EntrySchedule(entry),
            "options": {"expires": MIN_TICK_EXPIRY_S},
        }
        for entry in declared
    }


def _add_app_entries(sender: Any = None, **_: Any) -> None:
    """In the beat process only: load the user's app and add the entries it supports."""
    if not Settings().app:
        return
    entries = app_entries(get_app())
    if entries:
        # The scheduler has already read ``beat_schedule`` by now (beat_init fires after setup).
        sender.scheduler.update_from_dict(entries)
        log.info("lunora beat: added %s from LUNORA_APP", sorted(entries))


signals.beat_init.connect(_add_app_entries, weak=False)
