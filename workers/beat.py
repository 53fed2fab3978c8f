"""Celery beat's schedule: the sweep tick, plus what the user's app supports — the due-delayed-runs
tick and agents' cron entries (added when beat starts, from ``LUNORA_APP``).

Run one beat replica (``lunora beat``). The sweep re-enqueues runs whose next step has no live lease
(a message lost in the broker, a worker killed before it acknowledged), so it only needs to be
frequent enough to bound that delay. Delayed runs live in the database (``agent_schedules``), never
in a broker ETA: an ETA longer than the visibility timeout is redelivered again and again.

Configuration: ``LUNORA_SWEEP_INTERVAL`` (seconds, default 5), through ``Settings``.

Example::

    from workers.beat import beat_schedule
    beat_schedule()["lunora-sweep"]   # {"task": "lunora.sweep", "schedule": 5.0, ...}
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from celery import signals
from celery.schedules import crontab

from lunora_jobs.config import Settings
from workers.app_loader import get_app

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
    """The fixed entry: the sweep, every ``interval`` seconds (env ``LUNORA_SWEEP_INTERVAL``)."""
    every = interval if interval is not None else sweep_interval_s()
    return {"lunora-sweep": _tick("lunora.sweep", every)}


def app_entries(lunora_app: Any, interval: float | None = None) -> dict[str, dict[str, Any]]:
    """Entries that depend on what the user's app supports: the due-delayed-runs tick (when the app
    has ``dispatch_due``) and the cron entries its agents declare (``cron_entries``)."""
    entries: dict[str, dict[str, Any]] = {}
    if callable(getattr(lunora_app, "dispatch_due", None)):
        every = interval if interval is not None else sweep_interval_s()
        entries["lunora-dispatch-due"] = _tick("lunora.dispatch_due", every)
    declared = getattr(lunora_app, "cron_entries", None)
    if declared is not None:
        entries.update(cron_entries(declared() if callable(declared) else declared))
    return entries


def cron_entries(declared: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Beat entries for agents' cron declarations.

    Each declaration is a mapping with ``name``, ``agent``, ``input``, ``thread_key`` and either
    ``cron`` (a five-field crontab string, UTC) or ``every`` (seconds). Each entry starts a run
    through the ``lunora.start_run`` task.
    """
    entries: dict[str, dict[str, Any]] = {}
    for item in declared:
        if "cron" in item:
            minute, hour, day_of_month, month, day_of_week = str(item["cron"]).split()
            schedule: Any = crontab(minute, hour, day_of_week, day_of_month, month)
        else:
            schedule = float(item["every"])
        entries[f"lunora-cron:{item['name']}"] = {
            "task": "lunora.start_run",
            "schedule": schedule,
            "kwargs": {
                "agent": item["agent"],
                "input": item.get("input"),
                "thread_key": item.get("thread_key"),
                "owner": item.get("owner"),
            },
        }
    return entries


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
