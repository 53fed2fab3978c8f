"""Scheduling: delayed runs and cron entries on the durable due-time table (``agent_schedules``).

- ``cron.py``: ``cron_jobs()`` and ``CronEntry`` (fire times, missed-fire policy).
- ``due.py``: claiming and firing due rows exactly once (``DueDispatcher``, ``occurrence_run_id``).
- ``scheduler.py``: ``app.scheduler`` (``run_after``, ``run_at``, ``cancel``, ``list``, ``register``,
  ``dispatch_due``) and the embedded ticker.

Example::

    crons = cron_jobs()
    crons.interval("poll", seconds=300, agent=support, input="check the inbox")
    app = Lunora.from_env(agents=[support], crons=crons)
    app.scheduler.run_after(7200, support, {"input": "follow up", "thread_key": "t-1"})
"""

from lunora_jobs.scheduling.cron import CronEntry, CronJobs, MissedPolicy, cron_jobs
from lunora_jobs.scheduling.due import MAX_ATTEMPTS, DueReport, occurrence_run_id
from lunora_jobs.scheduling.scheduler import Scheduler

__all__ = [
    "MAX_ATTEMPTS", "CronEntry", "CronJobs", "DueReport", "MissedPolicy", "Scheduler", "cron_jobs",
    "occurrence_run_id",
]
