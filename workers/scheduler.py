"""Beat's scheduler: Celery's persistent scheduler, with its file where the settings say.

Celery's default writes ``celerybeat-schedule`` into the working directory, which in a container is
the (read-only, root-owned) application folder: beat dies with ``PermissionError``. This scheduler
keeps the file at ``LUNORA_BEAT_SCHEDULE`` (default ``<LUNORA_DATA_DIR>/celerybeat-schedule``),
creating its folder, and touches ``LUNORA_HEARTBEAT_FILE`` on every tick, so a liveness probe sees
beat's loop turn. An explicit ``lunora beat -s PATH`` still wins.

The file only remembers when each entry last ran: losing it (an emptyDir on a pod restart) costs
nothing, since due runs and cron fires are claimed in the database.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celery.beat import PersistentScheduler

from lunora_jobs.config import Settings
from workers.heartbeat import touch


class LunoraScheduler(PersistentScheduler):  # type: ignore[misc]
    """``PersistentScheduler`` that creates its file's folder and touches the heartbeat file per tick."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        settings = Settings()
        self._heartbeat = settings.heartbeat_file
        super().__init__(*args, **kwargs)
        if self._heartbeat is not None:
            # Tick at least once per heartbeat interval, whatever the schedule, so the file stays fresh.
            scheduled: float = self.max_interval  # type: ignore[has-type]  # set by Celery's __init__
            self.max_interval = min(scheduled, settings.heartbeat_interval)

    def setup_schedule(self) -> None:
        """Open (or create) the schedule file, creating its folder first."""
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """One scheduler iteration, then a heartbeat."""
        interval: float = super().tick(*args, **kwargs)
        if self._heartbeat is not None:
            touch(self._heartbeat)
        return interval
