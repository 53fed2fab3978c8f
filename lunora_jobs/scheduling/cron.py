"""Cron entries: ``cron_jobs()`` declares them, each computes its next fire time.

An entry's fires are occurrences of its spec (a five-field crontab expression in a time zone, via
``croniter``, or a fixed interval anchored at the epoch, so every process agrees on the fire times).
The entry's row in ``agent_schedules`` (id ``cron:<name>``) holds its next fire and its last fire,
so a beat restart (or a lost beat schedule file) neither re-fires nor forgets an occurrence.

Missed fires (beat was down when one came due, by more than ``grace_s``): ``missed="once"`` fires one
catch-up run for them all on restart; ``missed="skip"`` drops them and waits for the next fire.

Example::

    crons = cron_jobs()
    crons.daily("nightly", hour_utc=3, minute_utc=0, agent=support, input="sweep")
    crons.cron("weekday-report", "30 8 * * 1-5", tz="Europe/Berlin", agent=support, input="report")
    app = Lunora.from_env(agents=[support], crons=crons)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.store._codec import check_identity

MissedPolicy = Literal["once", "skip"]
MISSED_POLICIES: tuple[str, ...] = ("once", "skip")
CRON_PREFIX = "cron:"
MAX_SCHEDULE_ID = 128  # agent_schedules.id


@dataclass(frozen=True, slots=True)
class CronEntry:
    """One declared entry: which agent runs with which input, and when (``spec`` in ``tz``).

    ``spec`` is ``"cron <expression>"`` or ``"every <seconds>"``. A fire is late when it is claimed
    more than ``grace_s`` after its time; ``missed`` says what a late fire does.
    """

    name: str
    agent: str
    spec: str
    tz: str = "UTC"
    input: Any = None
    thread_key: str | None = None
    owner: str | None = None
    missed: MissedPolicy = "once"
    grace_s: float = 60.0

    @property
    def schedule_id(self) -> str:
        """The entry's row id in ``agent_schedules``."""
        return CRON_PREFIX + self.name

    @property
    def timing(self) -> str:
        """What decides the fire times: a changed timing re-plans the next fire on deploy."""
        return f"{self.spec} {self.tz}"

    def next_after(self, after_ms: int) -> int:
        """The first fire time strictly after ``after_ms`` (epoch-ms)."""
        kind, _, value = self.spec.partition(" ")
        if kind == "every":
            every = int(float(value) * 1000)
            return (after_ms // every + 1) * every
        start = datetime.fromtimestamp(after_ms / 1000, tz=UTC).astimezone(ZoneInfo(self.tz))
        nxt: datetime = croniter(value, start).get_next(datetime)
        return int(nxt.timestamp() * 1000)

    def payload(self) -> dict[str, Any]:
        """What the entry's row stores: the run it starts and its timing (shown by ``schedules list``)."""
        return {
            "input": self.input, "thread_key": self.thread_key, "owner": self.owner,
            "timing": self.timing, "missed": self.missed,
        }


def _agent_name(agent: AgentDefinition | str) -> str:
    name = agent.name if isinstance(agent, AgentDefinition) else agent
    check_identity("agent", name)
    return name


class CronJobs:
    """A set of cron entries; register it with ``Lunora(crons=...)`` or ``app.scheduler.register``.

    Every method returns the entry it added; names are unique (``ConfigurationError`` otherwise).
    """

    def __init__(self) -> None:
        self._entries: dict[str, CronEntry] = {}

    def __iter__(self) -> Iterator[CronEntry]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def daily(
        self, name: str, *, hour_utc: int, minute_utc: int = 0, agent: AgentDefinition | str,
        input: Any = None, thread_key: str | None = None, owner: str | None = None,
        missed: MissedPolicy = "once",
    ) -> CronEntry:
        """Every day at ``hour_utc:minute_utc`` UTC."""
        _check_range("hour_utc", hour_utc, 23)
        _check_range("minute_utc", minute_utc, 59)
        return self.cron(name, f"{minute_utc} {hour_utc} * * *", agent=agent, input=input,
                         thread_key=thread_key, owner=owner, missed=missed)

    def hourly(
        self, name: str, *, minute_utc: int = 0, agent: AgentDefinition | str, input: Any = None,
        thread_key: str | None = None, owner: str | None = None, missed: MissedPolicy = "once",
    ) -> CronEntry:
        """Every hour at ``minute_utc`` past."""
        _check_range("minute_utc", minute_utc, 59)
        return self.cron(name, f"{minute_utc} * * * *", agent=agent, input=input, thread_key=thread_key,
                         owner=owner, missed=missed)

    def interval(
        self, name: str, *, seconds: float, agent: AgentDefinition | str, input: Any = None,
        thread_key: str | None = None, owner: str | None = None, missed: MissedPolicy = "once",
    ) -> CronEntry:
        """Every ``seconds`` (at multiples of it since the epoch, so all processes agree)."""
        if not seconds >= 1:
            raise ConfigurationError(f"interval {name!r}: seconds must be at least 1, got {seconds!r}.")
        return self._add(CronEntry(name, _agent_name(agent), f"every {float(seconds):g}", "UTC", input,
                                   thread_key, owner, _policy(name, missed)))

    def cron(
        self, name: str, expression: str, *, agent: AgentDefinition | str, tz: str = "UTC",
        input: Any = None, thread_key: str | None = None, owner: str | None = None,
        missed: MissedPolicy = "once",
    ) -> CronEntry:
        """A five-field crontab ``expression`` (minute hour day-of-month month day-of-week) in ``tz``."""
        if len(expression.split()) != 5 or not croniter.is_valid(expression):
            raise ConfigurationError(
                f"cron {name!r}: {expression!r} is not a five-field crontab expression "
                "(minute hour day-of-month month day-of-week), e.g. '*/5 * * * *'."
            )
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigurationError(
                f"cron {name!r}: unknown time zone {tz!r}; use an IANA name such as 'Europe/Berlin'."
            ) from None
        return self._add(CronEntry(name, _agent_name(agent), f"cron {expression}", tz, input, thread_key,
                                   owner, _policy(name, missed)))

    def _add(self, entry: CronEntry) -> CronEntry:
        if not entry.name or len(entry.schedule_id) > MAX_SCHEDULE_ID:
            raise ConfigurationError(
                f"cron entry name {entry.name!r}: give a name of 1 to "
                f"{MAX_SCHEDULE_ID - len(CRON_PREFIX)} characters."
            )
        if entry.name in self._entries:
            raise ConfigurationError(f"two cron entries are named {entry.name!r}; names must be unique.")
        self._entries[entry.name] = entry
        return entry


def _check_range(field: str, value: int, top: int) -> None:
    if not (isinstance(value, int) and 0 <= value <= top):
        raise ConfigurationError(f"{field} must be an integer from 0 to {top}, got {value!r}.")


def _policy(name: str, missed: str) -> MissedPolicy:
    if missed not in MISSED_POLICIES:
        raise ConfigurationError(
            f"cron {name!r}: missed={missed!r}; use 'once' (one catch-up run) or 'skip'."
        )
    return "once" if missed == "once" else "skip"


def cron_jobs() -> CronJobs:
    """A new, empty set of cron entries."""
    return CronJobs()
