"""Delayed runs (``run_after`` / ``run_at``) on a fake clock: due at the right tick, fired exactly once
by concurrent dispatchers, taken over after a claimer dies, cancellable before they fire."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from scheduling_support import MakeApp, support

from lunora_jobs.engine.start import start_run
from lunora_jobs.errors import ConfigurationError, NotFoundError
from lunora_jobs.scheduling import MAX_ATTEMPTS, occurrence_run_id
from lunora_jobs.store.base import SCHEDULE_LEASE_MS
from lunora_jobs.store.records import NewRun
from lunora_jobs.testing import FakeClock

HOURS_2 = 2 * 3600 * 1000


def test_run_after_two_hours_fires_at_its_tick_and_only_then(make_app: MakeApp, clock: FakeClock) -> None:
    app = make_app()
    sid = app.scheduler.run_after(7200, "support", {"input": "follow up", "thread_key": "t-1", "owner": "u7"})
    assert app.scheduler.get(sid).status == "pending"

    clock.advance(HOURS_2 - 1)
    assert app.dispatch_due().fired == []  # one ms early: nothing
    assert app.store.list_runs() == []

    clock.advance(1)
    report = app.dispatch_due()
    assert report.fired == [(sid, occurrence_run_id(sid, clock.now))]
    (run,) = app.store.list_runs()
    assert (run.id, run.owner, run.status) == (report.fired[0][1], "u7", "completed")
    assert [m.content for m in app.threads.messages("t-1", viewer="u7")] == ["follow up", "done"]
    row = app.scheduler.get(sid)
    assert (row.status, row.run_id, row.fired_at, row.attempts) == ("fired", run.id, clock.now, 1)

    clock.advance(HOURS_2)
    assert app.dispatch_due().fired == []  # fired once, never again
    assert len(app.store.list_runs()) == 1


def test_run_at_takes_an_aware_datetime(make_app: MakeApp, clock: FakeClock) -> None:
    app = make_app()
    when = datetime.fromtimestamp(clock.now / 1000, tz=UTC) + timedelta(minutes=5)
    sid = app.scheduler.run_at(when, "support", {"input": "at five past"})
    assert app.scheduler.get(sid).due_at == clock.now + 300_000
    with pytest.raises(ConfigurationError, match="time-zone-aware"):
        app.scheduler.run_at(when.replace(tzinfo=None), "support", {"input": "naive"})


def test_two_dispatchers_at_once_start_each_run_once(make_app: MakeApp, clock: FakeClock) -> None:
    beat_a, beat_b = make_app(), make_app()  # two apps over one database: two beats by mistake
    ids = [beat_a.scheduler.run_after(60 + i, "support", {"input": f"job {i}"}) for i in range(20)]
    clock.advance(90_000)

    with ThreadPoolExecutor(4) as pool:
        beats = [beat_a, beat_b, beat_a, beat_b]
        reports = list(pool.map(lambda app: app.scheduler.dispatch_due(limit=3), beats))

    fired = [sid for report in reports for sid, _ in report.fired]
    assert sorted(fired) == sorted(ids)  # every schedule fired, none twice
    runs = beat_a.store.list_runs()
    assert sorted(r.id for r in runs) == sorted(occurrence_run_id(sid, beat_a.scheduler.get(sid).due_at or 0)
                                                for sid in ids)


def test_a_claimer_killed_after_its_claim_is_taken_over_after_the_lease(
    make_app: MakeApp, clock: FakeClock
) -> None:
    app = make_app()
    sid = app.scheduler.run_after(10, "support", {"input": "x"})
    clock.advance(10_000)
    (claimed,) = app.store.claim_due_schedules(clock.now, 10, "dead-beat")  # ... and then it was SIGKILLed

    assert app.dispatch_due().fired == []  # its lease still holds
    clock.advance(SCHEDULE_LEASE_MS)
    assert app.dispatch_due().fired == [(sid, occurrence_run_id(sid, claimed.due_at or 0))]
    assert app.scheduler.get(sid).attempts == 2
    assert len(app.store.list_runs()) == 1
    # The dead claimer's late fire record is fenced off: the row is another claim's now.
    assert not app.store.finish_schedule(sid, claimed_by="dead-beat", claimed_at=claimed.claimed_at or 0,
                                         status="failed")
    assert app.scheduler.get(sid).status == "fired"


def test_a_claimer_killed_after_starting_the_run_starts_nothing_twice(
    make_app: MakeApp, clock: FakeClock
) -> None:
    app = make_app()
    sid = app.scheduler.run_after(10, "support", {"input": "once", "thread_key": "t-once"})
    clock.advance(10_000)
    (claimed,) = app.store.claim_due_schedules(clock.now, 10, "dead-beat")
    run_id = occurrence_run_id(sid, claimed.due_at or 0)
    start_run(app.deps, app.deps.agent("support"), input="once", thread_key="t-once", run_id=run_id)
    # killed here: the run started, the fire was never recorded

    clock.advance(SCHEDULE_LEASE_MS)
    assert app.dispatch_due().fired == [(sid, run_id)]
    assert [r.id for r in app.store.list_runs()] == [run_id]
    assert [m.content for m in app.threads.messages("t-once", trusted=True)] == ["once", "done"]


def test_an_occurrence_whose_claimers_keep_dying_fails_after_max_attempts(
    make_app: MakeApp, clock: FakeClock
) -> None:
    app = make_app()
    sid = app.scheduler.run_after(0, "support", {"input": "poison"})
    for n in range(MAX_ATTEMPTS):
        assert app.store.claim_due_schedules(clock.now, 10, f"dead-{n}")
        clock.advance(SCHEDULE_LEASE_MS)
    assert app.dispatch_due().failed == [sid]
    row = app.scheduler.get(sid)
    assert row.status == "failed" and "gave up" in (row.last_error or "")
    assert app.store.list_runs() == []


def test_cancel_before_the_fire(make_app: MakeApp, clock: FakeClock) -> None:
    app = make_app()
    keep = app.scheduler.run_after(60, "support", {"input": "keep"})
    drop = app.scheduler.run_after(60, "support", {"input": "drop"})
    assert app.scheduler.cancel(drop) is True
    assert app.scheduler.cancel(drop) is False  # already cancelled
    clock.advance(60_000)
    assert [sid for sid, _ in app.dispatch_due().fired] == [keep]
    assert app.scheduler.cancel(keep) is False  # already fired
    assert [s.id for s in app.scheduler.list(status="cancelled")] == [drop]
    with pytest.raises(NotFoundError, match="schedules list"):
        app.scheduler.cancel("no-such-schedule")


def test_a_fire_that_cannot_start_is_recorded_as_failed(make_app: MakeApp, clock: FakeClock) -> None:
    app = make_app()
    thread = app.store.ensure_thread("busy")
    app.store.create_run(NewRun("in-flight", thread.id, "ops", None))
    assert app.store.acquire_thread(thread.id, "in-flight")  # a run in flight owns the thread
    sid = app.scheduler.run_after(0, "ops", {"input": "x", "thread_key": "busy"})  # "ops" rejects

    assert app.dispatch_due().failed == [sid]
    row = app.scheduler.get(sid)
    assert row.status == "failed" and "ConflictError" in (row.last_error or "")
    assert [r.id for r in app.store.list_runs()] == ["in-flight"]


def test_scheduling_refuses_what_it_does_not_implement(make_app: MakeApp) -> None:
    app = make_app()
    with pytest.raises(ConfigurationError, match="unknown run option"):
        app.scheduler.run_after(1, "support", {"input": "x", "priority": 5})
    with pytest.raises(ConfigurationError, match="No agent named 'nobody'"):
        app.scheduler.run_after(1, "nobody", {"input": "x"})
    with pytest.raises(ConfigurationError, match="zero or more"):
        app.scheduler.run_after(-1, "support")
    with pytest.raises(ConfigurationError, match="cron entries"):
        app.scheduler.run_after(1, "support", id="cron:mine")


def test_the_embedded_ticker_starts_only_with_something_to_fire(store: Any) -> None:
    from lunora_jobs import Lunora, Settings, cron_jobs

    def tickers() -> int:
        return sum(t.name == "lunora-scheduler" for t in threading.enumerate())

    before = tickers()
    idle = Lunora([support], store=store, settings=Settings(scheduler_tick=0.05))
    assert tickers() == before  # an app without schedules polls nothing
    crons = cron_jobs()
    crons.hourly("pulse", agent=support)
    ticking = Lunora([support], store=store, settings=Settings(scheduler_tick=0.05), crons=crons)
    try:
        assert tickers() == before + 1
        deadline = time.monotonic() + 10
        while ticking.scheduler.list() == []:  # the thread wrote the entry's row on its own
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        ticking.close()
        idle.close()
    assert "cron:pulse" in {s.id for s in ticking.store.list_schedules()}
