"""Cron entries on a fake clock: fire times (UTC and time zones), one run per fire however often it
is delivered, the missed-fire policies after downtime, re-planning on a changed timing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from scheduling_support import START, MakeApp, support

from lunora_jobs import cron_jobs
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.scheduling import occurrence_run_id
from lunora_jobs.testing import FakeClock

MINUTE = 60_000
HOUR = 60 * MINUTE
DAY = 24 * HOUR


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def test_fire_times_in_utc_and_in_a_time_zone() -> None:
    crons = cron_jobs()
    nightly = crons.daily("nightly", hour_utc=3, minute_utc=15, agent=support, input="sweep")
    hourly = crons.hourly("hourly", minute_utc=30, agent=support)
    every = crons.interval("poll", seconds=300, agent="support")
    berlin = crons.cron("berlin", "0 9 * * 1-5", tz="Europe/Berlin", agent=support)
    assert nightly.next_after(START) == _ms("2026-01-01T03:15:00+00:00")
    # strictly after:
    assert nightly.next_after(_ms("2026-01-01T03:15:00+00:00")) == _ms("2026-01-02T03:15:00+00:00")
    assert hourly.next_after(START) == _ms("2026-01-01T00:30:00+00:00")
    assert every.next_after(START + 1) == START + 300_000
    # 2026-01-01 is a Thursday; 09:00 in Berlin is 08:00 UTC in winter and 07:00 UTC in summer.
    assert berlin.next_after(START) == _ms("2026-01-01T08:00:00+00:00")
    # Friday afternoon -> Monday:
    assert berlin.next_after(_ms("2026-07-03T12:00:00+00:00")) == _ms("2026-07-06T07:00:00+00:00")
    assert [e.name for e in crons] == ["nightly", "hourly", "poll", "berlin"]


def test_declarations_that_cannot_work_are_refused() -> None:
    crons = cron_jobs()
    crons.hourly("dup", agent=support)
    with pytest.raises(ConfigurationError, match="unique"):
        crons.hourly("dup", agent=support)
    with pytest.raises(ConfigurationError, match="five-field"):
        crons.cron("bad", "every day at noon", agent=support)
    with pytest.raises(ConfigurationError, match="five-field"):
        crons.cron("six", "0 0 * * * *", agent=support)
    with pytest.raises(ConfigurationError, match="time zone"):
        crons.cron("tz", "0 0 * * *", tz="Mars/Olympus", agent=support)
    with pytest.raises(ConfigurationError, match="missed"):
        crons.hourly("policy", agent=support, missed="all")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="hour_utc"):
        crons.daily("late", hour_utc=24, agent=support)
    with pytest.raises(ConfigurationError, match="at least 1"):
        crons.interval("fast", seconds=0.1, agent=support)


def test_a_cron_entry_fires_on_an_advanced_clock_once_per_fire(make_app: MakeApp, clock: FakeClock) -> None:
    crons = cron_jobs()
    crons.interval("poll", seconds=600, agent=support, input="check", thread_key=None, owner="system")
    beat_a, beat_b = make_app(crons), make_app(crons)  # two beats by mistake, one database
    assert beat_a.dispatch_due().fired == []  # writes the entry's row: first fire in 10 minutes
    row = beat_a.scheduler.get("cron:poll")
    assert (row.kind, row.due_at, row.status) == ("cron", START + 600_000, "pending")

    clock.advance(600_000)
    fired = beat_a.dispatch_due().fired + beat_b.dispatch_due().fired + beat_a.dispatch_due().fired
    assert fired == [("cron:poll", occurrence_run_id("cron:poll", START + 600_000))]
    row = beat_b.scheduler.get("cron:poll")
    assert (row.status, row.due_at, row.run_id, row.fired_at) == (
        "pending", START + 1_200_000, fired[0][1], START + 600_000)

    clock.advance(600_000)
    second = beat_b.dispatch_due().fired
    assert second == [("cron:poll", occurrence_run_id("cron:poll", START + 1_200_000))]
    runs = beat_a.store.list_runs()
    assert sorted(r.id for r in runs) == sorted([fired[0][1], second[0][1]])  # each fire its own run
    assert {r.owner for r in runs} == {"system"}


def test_missed_fires_after_downtime_run_once(make_app: MakeApp, clock: FakeClock) -> None:
    crons = cron_jobs()
    crons.daily("nightly", hour_utc=3, agent=support, input="sweep")  # missed="once" by default
    app = make_app(crons)
    app.dispatch_due()
    clock.advance(3 * DAY + 5 * HOUR)  # beat was down for three nightly fires

    fired = app.dispatch_due().fired
    assert fired == [("cron:nightly", occurrence_run_id("cron:nightly", _ms("2026-01-01T03:00:00+00:00")))]
    assert len(app.store.list_runs()) == 1  # one catch-up run, not three
    assert app.scheduler.get("cron:nightly").due_at == _ms("2026-01-05T03:00:00+00:00")  # next after now
    assert app.dispatch_due().fired == []


def test_missed_fires_after_downtime_are_skipped_by_policy(make_app: MakeApp, clock: FakeClock) -> None:
    crons = cron_jobs()
    crons.daily("nightly", hour_utc=3, agent=support, input="sweep", missed="skip")
    app = make_app(crons)
    app.dispatch_due()
    clock.advance(3 * HOUR + 30_000)  # 30 s late: within the grace, it still fires
    assert [sid for sid, _ in app.dispatch_due().fired] == ["cron:nightly"]

    clock.advance(2 * DAY)  # beat down across the next two fires
    report = app.dispatch_due()
    assert (report.fired, report.skipped) == ([], ["cron:nightly"])
    row = app.scheduler.get("cron:nightly")
    assert row.status == "pending" and "skipped the fire of 2026-01-02T03:00:00" in (row.last_error or "")
    assert row.due_at == _ms("2026-01-04T03:00:00+00:00")
    assert len(app.store.list_runs()) == 1


def test_a_changed_timing_replans_and_an_undeclared_entry_is_orphaned(
    make_app: MakeApp, clock: FakeClock
) -> None:
    old = cron_jobs()
    old.daily("report", hour_utc=3, agent=support)
    make_app(old).dispatch_due()
    assert make_app(old).scheduler.get("cron:report").due_at == _ms("2026-01-01T03:00:00+00:00")

    new = cron_jobs()
    new.daily("report", hour_utc=1, agent=support)  # a deploy moves it
    deployed = make_app(new)
    deployed.dispatch_due()
    assert deployed.scheduler.get("cron:report").due_at == _ms("2026-01-01T01:00:00+00:00")

    removed = make_app()  # a deploy without the entry
    clock.advance(2 * HOUR)
    assert removed.dispatch_due().fired == []
    assert removed.scheduler.get("cron:report").status == "orphaned"
    assert removed.store.list_runs() == []


def test_a_cancelled_cron_entry_stays_off(make_app: MakeApp, clock: FakeClock) -> None:
    crons = cron_jobs()
    crons.hourly("pulse", agent=support)
    app = make_app(crons)
    app.dispatch_due()
    assert app.scheduler.cancel("cron:pulse") is True
    clock.advance(3 * HOUR)
    assert make_app(crons).dispatch_due().fired == []  # a restarted process does not revive it
    assert app.store.list_runs() == []


def test_an_entry_for_an_agent_the_app_lacks_is_refused(make_app: MakeApp) -> None:
    crons = cron_jobs()
    crons.hourly("ghost", agent="nobody")
    with pytest.raises(ConfigurationError, match="nobody"):
        make_app(crons)


def test_fire_times_are_epoch_aligned_for_intervals() -> None:
    entry = cron_jobs().interval("tick", seconds=90, agent=support)
    t = int(datetime(2026, 3, 1, tzinfo=UTC).timestamp() * 1000) + 1234
    assert entry.next_after(t) % 90_000 == 0 and 0 < entry.next_after(t) - t <= 90_000
