"""Beat's ticks stay out of Flower and the logs unless they did something.

Beat sends ``lunora.sweep`` (and ``lunora.dispatch_due``) every few seconds. As ordinary tasks, each
tick would be a row in Flower's task list and three INFO lines ("Sending due task", "received",
"succeeded") in the logs, burying the steps an operator looks for. So the tick tasks send no task
events (``send_events=False`` in ``workers.tasks``), and this filter drops Celery's per-task INFO
lines for them; the sweep logs its own line when it recovered something, and failures are logged as
always (they are not INFO).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

TICK_TASKS = frozenset({"lunora.sweep", "lunora.dispatch_due"})
"""The periodic tasks beat sends."""

_LOGGERS = ("celery.app.trace", "celery.worker.strategy", "celery.beat")


class QuietTicks(logging.Filter):
    """Drop INFO records about a tick task: the worker's received/succeeded lines and beat's send line."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep every record except an INFO line naming a tick task."""
        if record.levelno != logging.INFO:
            return True
        args = record.args
        if isinstance(args, Mapping):  # celery.app.trace / strategy: a context dict with the task name
            return args.get("name") not in TICK_TASKS
        if isinstance(args, tuple) and len(args) == 2:  # celery.beat: (entry name, task name)
            return args[1] not in TICK_TASKS
        return True


_filter = QuietTicks()


def install() -> None:
    """Attach the filter to Celery's per-task loggers (idempotent)."""
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if _filter not in logger.filters:
            logger.addFilter(_filter)
