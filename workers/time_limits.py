"""Celery time limits of the step tasks, from the agents' ``step_timeout_s``.

A step task (``lunora.turn`` / ``lunora.tool`` / ``lunora.step``) gets Celery's soft time limit at
the longest ``step_timeout_s`` of the agents the worker's app declares, and its hard limit
``HARD_LIMIT_MARGIN_S`` later. At the soft limit Celery raises ``SoftTimeLimitExceeded`` inside the
step: the engine's work stage records that attempt as failed (and retries it up to
``max_attempts``). A tool that swallows the exception and keeps going is killed at the hard limit:
the pool process is replaced, the step's lease (no longer renewed, ``engine/leases.py``) lapses and
the sweep has the step retried. Either way the process is free again within the limit, and a hung
tool never runs beside its own retry: its lease stays alive exactly as long as it runs.

The limits are set on the task objects of the process that loads the app; in the prefork pool the
worker's main process enforces them (it loads the app for its start-up checks), before any step. On
the solo pool, where Celery enforces none, ``workers.solo_limits`` does, with the same effects (the
process is replaced at the hard limit).
Agents with very different ``step_timeout_s`` are best served by separate workers (routes, queues).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

HARD_LIMIT_MARGIN_S = 10.0
"""Seconds between the soft limit (the step fails its attempt) and the hard one (the process is killed)."""
STEP_TASKS = ("lunora.turn", "lunora.tool", "lunora.step")


def step_time_limits(lunora_app: Any) -> tuple[float, float] | None:
    """(soft, hard) seconds for the step tasks of ``lunora_app``'s agents; None without agents."""
    timeouts = [float(getattr(agent, "step_timeout_s", 0)) for agent in _agents(lunora_app)]
    timeouts = [t for t in timeouts if t > 0]
    if not timeouts:
        return None
    soft = max(timeouts)
    return soft, soft + HARD_LIMIT_MARGIN_S


def apply_time_limits(celery_app: Any, lunora_app: Any) -> tuple[float, float] | None:
    """Set the step tasks' ``soft_time_limit`` and ``time_limit`` from ``lunora_app``'s agents."""
    limits = step_time_limits(lunora_app)
    if limits is None:
        return None
    for name in STEP_TASKS:
        task = celery_app.tasks.get(name)
        if task is not None:
            task.soft_time_limit, task.time_limit = limits
    return limits


def _agents(lunora_app: Any) -> Iterable[Any]:
    registry = getattr(lunora_app, "registry", None)
    return registry.values() if isinstance(registry, dict) else ()
