"""A Celery beat schedule that follows a Lunora cron entry's own fire times.

Beat lists each cron entry (``lunora-cron:<name>``) and wakes ``lunora.dispatch_due`` when one comes
due. The fire times come from ``CronEntry.next_after`` — the same function the database claim
uses — so beat and the claim agree in every time zone and across DST, with no second cron parser.

Example::

    EntrySchedule(entry).is_due(last_run_at)   # schedstate(is_due=..., next=seconds to wait)
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from celery.schedules import BaseSchedule, schedstate

from lunora_jobs.scheduling import CronEntry


def _ms(moment: datetime) -> int:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return int(aware.timestamp() * 1000)


class EntrySchedule(BaseSchedule):  # type: ignore[misc]
    """Due when a fire time of ``entry`` has passed since beat last ran the entry."""

    def __init__(self, entry: CronEntry, nowfun: Callable[[], datetime] | None = None) -> None:
        super().__init__(nowfun=nowfun)
        self.entry = entry

    def _now(self) -> datetime:
        return self.nowfun() if self.nowfun is not None else datetime.now(UTC)

    def remaining_estimate(self, last_run_at: datetime) -> timedelta:
        """Time from now to the first fire after ``last_run_at`` (negative when overdue)."""
        return timedelta(milliseconds=self.entry.next_after(_ms(last_run_at)) - _ms(self._now()))

    def is_due(self, last_run_at: datetime) -> Any:
        """``(due, seconds until the next check)``."""
        now = _ms(self._now())
        if self.entry.next_after(_ms(last_run_at)) <= now:
            return schedstate(True, (self.entry.next_after(now) - now) / 1000)
        return schedstate(False, (self.entry.next_after(_ms(last_run_at)) - now) / 1000)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EntrySchedule) and other.entry == self.entry

    def __hash__(self) -> int:
        return hash(self.entry.timing)

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.entry,))

    def __repr__(self) -> str:
        return f"<lunora cron {self.entry.name}: {self.entry.timing}>"
