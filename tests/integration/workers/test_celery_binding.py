"""The Celery binding on its own: reliability config, the dispatcher's wire format and round trips, beat."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import redis
import redis.connection
from pydantic import ValidationError
from suite_settings import settings

from lunora_jobs.config import Settings
from lunora_jobs.engine.dispatch import Dispatcher, StepTask
from workers.beat import app_entries, beat_schedule, cron_entries
from workers.celery_app import app, main, make_app, reliability_config
from workers.dispatch import CeleryDispatcher

pytestmark = pytest.mark.integration

# The shared Redis (``redis_url``): every test here publishes to a queue of its own (``queue``).
BROKER = settings.redis_url


def _messages(queue: str) -> list[dict[str, Any]]:
    raw = redis.Redis.from_url(BROKER).lrange(queue, 0, -1)
    out = []
    for item in reversed(raw):  # LPUSH'd: the oldest message is last
        message = json.loads(item)
        args, _kwargs, _ = json.loads(base64.b64decode(message["body"]))
        out.append({"task": message["headers"]["task"], "id": message["headers"]["id"], "args": args})
    return out


def test_reliability_config_is_at_least_once() -> None:
    conf = reliability_config("redis://x/0", "q1", 7200)
    assert conf["task_acks_late"] is True
    assert conf["task_reject_on_worker_lost"] is True
    assert conf["worker_prefetch_multiplier"] == 1
    assert conf["task_ignore_result"] is True
    assert conf["broker_transport_options"] == {"visibility_timeout": 7200}  # kombu's ack emulation
    assert conf["result_backend_transport_options"] == {"visibility_timeout": 7200}
    assert conf["worker_cancel_long_running_tasks_on_connection_loss"] is True
    assert conf["worker_soft_shutdown_timeout"] > 0
    assert conf["task_default_queue"] == "q1" and conf["task_routes"] == {"lunora.*": {"queue": "q1"}}
    assert conf["accept_content"] == ["json"]
    # The live app carries the same settings.
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1


def test_by_default_redis_keeps_no_copy_of_a_delivered_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """``LUNORA_VISIBILITY_TIMEOUT`` unset (0): kombu's ack emulation is off, nothing to time out."""
    monkeypatch.delenv("LUNORA_VISIBILITY_TIMEOUT", raising=False)
    assert Settings().visibility_timeout == 0
    conf = reliability_config("redis://x/0", "q1", 0)
    assert conf["broker_transport_options"] == {"ack_emulation": False}
    assert conf["result_backend_transport_options"] == {}
    assert conf["task_acks_late"] is True and conf["task_reject_on_worker_lost"] is True
    built = make_app("redis://127.0.0.1:6379/0", "q1")
    assert built.conf.broker_transport_options == {"ack_emulation": False}
    monkeypatch.setenv("LUNORA_VISIBILITY_TIMEOUT", "-1")
    with pytest.raises(ValidationError):
        Settings()


def test_the_lunora_tasks_are_registered_under_their_names() -> None:
    import workers.tasks  # noqa: F401  (registers the tasks, as the worker's include does)

    names = {"lunora.turn", "lunora.tool", "lunora.step", "lunora.sweep", "lunora.dispatch_due",
             "lunora.start_run"}
    assert names <= set(app.tasks)


def test_dispatcher_satisfies_the_engine_protocol_and_routes_kinds(queue: str) -> None:
    dispatcher = CeleryDispatcher(BROKER, queue)
    assert isinstance(dispatcher, Dispatcher)

    dispatcher.dispatch([StepTask("r1", "llm:turn:0", "turn")])
    dispatcher.dispatch([StepTask("r1", "tool:search:c1", "tool"), StepTask("r1", "memory:recall", "memory")])

    assert _messages(queue) == [
        {"task": "lunora.turn", "id": "r1:llm:turn:0", "args": ["r1", "llm:turn:0"]},
        {"task": "lunora.tool", "id": "r1:tool:search:c1", "args": ["r1", "tool:search:c1"]},
        {"task": "lunora.step", "id": "r1:memory:recall", "args": ["r1", "memory:recall"]},
    ]


def test_one_round_trip_per_enqueue_and_one_for_a_whole_fan_out(
    queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dispatcher = CeleryDispatcher(BROKER, queue)
    dispatcher.dispatch([StepTask("warm", "llm:turn:0", "turn")])  # first publish declares the queue
    sends: list[bytes] = []
    original: Any = redis.connection.AbstractConnection.send_packed_command

    def counting(conn: Any, command: Any, check_health: bool = True) -> Any:
        sends.append(command)
        return original(conn, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counting)

    dispatcher.dispatch([StepTask("r2", "llm:turn:1", "turn")])
    assert len(sends) == 1
    sends.clear()
    dispatcher.dispatch([StepTask("r2", f"tool:t:c{i}", "tool") for i in range(5)])
    assert len(sends) == 1  # five LPUSHes in one pipeline
    assert [m["id"] for m in _messages(queue)][-5:] == [f"r2:tool:t:c{i}" for i in range(5)]


def test_an_empty_dispatch_touches_nothing(queue: str) -> None:
    CeleryDispatcher(BROKER, queue).dispatch([])
    assert redis.Redis.from_url(BROKER).llen(queue) == 0


def test_beat_schedule_ticks_the_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LUNORA_SWEEP_INTERVAL", "2.5")
    schedule = beat_schedule()
    assert schedule["lunora-sweep"]["task"] == "lunora.sweep"
    assert schedule["lunora-sweep"]["schedule"] == 2.5
    assert schedule["lunora-sweep"]["options"]["expires"] == 5.0  # a stale tick is dropped, not a late one
    assert beat_schedule(30.0)["lunora-sweep"]["options"]["expires"] == 30.0
    assert "lunora-sweep" in app.conf.beat_schedule


def test_app_entries_follow_what_the_app_supports(monkeypatch: pytest.MonkeyPatch) -> None:
    from lunora_jobs import Lunora, Settings, cron_jobs, define_agent
    from lunora_jobs.store.memory import InMemoryStore

    class Plain:
        pass

    support = define_agent(name="support", instructions="Help.", model="offline")
    crons = cron_jobs()
    crons.daily("nightly", hour_utc=3, agent=support)
    crons.cron("berlin", "30 9 * * 1-5", tz="Europe/Berlin", agent=support)
    crons.interval("pulse", seconds=60, agent=support)
    lunora = Lunora([support], store=InMemoryStore(), settings=Settings(scheduler_thread=False), crons=crons)

    assert app_entries(Plain()) == {}
    monkeypatch.setenv("LUNORA_SCHEDULER_TICK", "0.5")
    entries = app_entries(lunora)
    assert entries["lunora-dispatch-due"]["task"] == "lunora.dispatch_due"
    assert entries["lunora-dispatch-due"]["schedule"] == 0.5  # LUNORA_SCHEDULER_TICK, not the sweep's
    assert app_entries(lunora, interval=2.0)["lunora-dispatch-due"]["schedule"] == 2.0
    # Each cron entry is listed by beat as a wake-up of the same database claim (never a start_run).
    assert {k: v["task"] for k, v in entries.items() if k.startswith("lunora-cron:")} == {
        "lunora-cron:nightly": "lunora.dispatch_due", "lunora-cron:berlin": "lunora.dispatch_due",
        "lunora-cron:pulse": "lunora.dispatch_due",
    }
    assert "lunora-proposals" not in entries


def test_an_app_with_independent_approvals_gets_the_proposal_tick() -> None:
    from lunora_jobs import define_agent

    class Proposing:
        registry = {"a": define_agent(name="a", model="offline", action_approval_mode="independent")}

    entries = app_entries(Proposing(), interval=3.0)
    assert entries["lunora-proposals"]["task"] == "lunora.proposals_tick"
    assert entries["lunora-proposals"]["schedule"] == 3.0


def test_cron_entries_wake_the_claim_at_the_entrys_own_fire_times() -> None:
    import pickle
    from datetime import UTC, datetime, timedelta

    from lunora_jobs import cron_jobs
    from workers.cron_schedule import EntrySchedule

    crons = cron_jobs()
    berlin = crons.cron("berlin", "30 9 * * *", tz="Europe/Berlin", agent="support")
    pulse = crons.interval("pulse", seconds=60, agent="ops")
    entries = cron_entries([berlin, pulse])
    assert entries["lunora-cron:pulse"]["schedule"] == EntrySchedule(pulse)
    # Berlin's 09:30 is 08:30 UTC in January and 07:30 UTC in July.
    for day, fire in ((datetime(2026, 1, 5, 8, 0, tzinfo=UTC), datetime(2026, 1, 5, 8, 30, tzinfo=UTC)),
                      (datetime(2026, 7, 6, 7, 0, tzinfo=UTC), datetime(2026, 7, 6, 7, 30, tzinfo=UTC))):
        before = EntrySchedule(berlin, nowfun=lambda f=fire: f - timedelta(minutes=1))
        assert before.is_due(day).is_due is False and before.is_due(day).next == 60.0
        at = EntrySchedule(berlin, nowfun=lambda f=fire: f)
        due = at.is_due(day)
        assert due.is_due is True and due.next == 24 * 3600.0  # then the next day's fire
        assert at.is_due(fire).is_due is False  # beat ran it at the fire: not due again
    assert pickle.loads(pickle.dumps(EntrySchedule(berlin))) == EntrySchedule(berlin)  # beat's shelve


def test_main_runs_the_celery_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", "--help"]) == 0
    assert "--concurrency" in capsys.readouterr().out


def test_a_step_that_can_outlive_the_visibility_timeout_is_reported(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from lunora_jobs.agent import define_agent
    from lunora_jobs.models.scripted import ScriptedModel, final_turn
    from lunora_jobs.runtime import Lunora
    from workers.app_loader import _check_visibility_timeout

    monkeypatch.setenv("LUNORA_VISIBILITY_TIMEOUT", "60")
    model = ScriptedModel([final_turn("x")])
    quick = define_agent(name="quick", instructions="i", model=model, step_timeout_s=30)
    slow = define_agent(name="slow", instructions="i", model=model, step_timeout_s=120)
    lunora = Lunora(agents=[quick, slow], database_url=sqlite_url)

    with caplog.at_level("WARNING", logger="workers.app_loader"):
        _check_visibility_timeout(lunora)

    assert len(caplog.records) == 1
    assert "'slow'" in caplog.text and "LUNORA_VISIBILITY_TIMEOUT" in caplog.text
    caplog.clear()
    monkeypatch.delenv("LUNORA_VISIBILITY_TIMEOUT")  # the default, 0: Redis redelivers nothing
    with caplog.at_level("WARNING", logger="workers.app_loader"):
        _check_visibility_timeout(lunora)
    assert caplog.records == []


def test_the_workers_memory_of_cancelled_runs_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from celery.worker import state

    from workers.dispatch import RUN_STAMP
    from workers.revocations import PruneRunRevocations, prune_run_revocations

    monkeypatch.setitem(state.revoked_stamps, RUN_STAMP, [f"run-{i}" for i in range(1500)])
    assert prune_run_revocations(keep=1000) == 500
    assert state.revoked_stamps[RUN_STAMP] == [f"run-{i}" for i in range(500, 1500)]  # the newest stay
    assert prune_run_revocations(keep=1000) == 0
    assert PruneRunRevocations in app.steps["worker"]
