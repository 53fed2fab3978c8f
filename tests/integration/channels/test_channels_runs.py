"""Verified events become durable runs, once, and their answers go back — on the real engine and
store (SQLite and PostgreSQL), with the in-process dispatcher (the Celery fleet is in tests/e2e).

Each test drives ``dispatch_agent_channel(app=...)`` over HTTP (Starlette's test client), with the
production ``AppRunStarter`` (``inline=True``: the run executes in the test, as the embedded app
does) and the built-in deliverers pointed at local stand-ins for Slack, GitHub and Discord.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from channel_standins import DiscordStandIn, GitHubStandIn, SlackStandIn, running
from channels_apps import ENV, channel_agents
from channels_signing import (
    discord_command,
    discord_headers,
    github_comment,
    github_headers,
    slack_event,
    slack_headers,
)
from starlette.testclient import TestClient

from channels import dispatch_agent_channel
from channels.dispatch import AppRunStarter, InboundRun
from channels.inbound import ReplyTarget
from channels.ledger import delivery_key, ledger_for
from channels.replies import FAILED_TEXT, reply_step, sweep_replies
from lunora_jobs.config import Settings
from lunora_jobs.errors import ConflictError
from lunora_jobs.runtime import Lunora
from lunora_jobs.store.sql import create_store
from lunora_jobs.testing import FakeClock


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/channels.db"
    else:
        yield request.getfixturevalue("pg_url")


@pytest.fixture
def standins() -> Iterator[tuple[SlackStandIn, GitHubStandIn, DiscordStandIn]]:
    with contextlib.ExitStack() as stack:
        yield (stack.enter_context(running(SlackStandIn())), stack.enter_context(running(GitHubStandIn())),
               stack.enter_context(running(DiscordStandIn())))


@pytest.fixture
def settings(standins: tuple[SlackStandIn, GitHubStandIn, DiscordStandIn],
             monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    slack, github, discord = standins
    return Settings(slack_api_url=slack.api_url, github_api_url=github.url, discord_api_url=discord.url,
                    reply_timeout_s=3)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def app(database_url: str, settings: Settings, clock: FakeClock) -> Iterator[Lunora]:
    store = create_store(database_url, clock=clock)
    lunora = Lunora(channel_agents(), store=store, settings=settings)
    yield lunora
    lunora.close()


@pytest.fixture
def client(app: Lunora) -> TestClient:
    starter = AppRunStarter(app, inline=True)
    return TestClient(dispatch_agent_channel(list(app.agents), app=app, starter=starter))


def _runs(app: Lunora, agent: str) -> list[Any]:
    return [r for r in app.store.list_runs(limit=100) if r.agent == agent]


def test_a_signed_slack_event_starts_one_run_and_its_retries_none(
    app: Lunora, client: TestClient, standins: tuple[SlackStandIn, GitHubStandIn, DiscordStandIn]
) -> None:
    slack = standins[0]
    body = slack_event("what is up?", event_id="Ev1", team="T1", user="U1", channel="C1", ts="17.1")
    assert client.post("/slack", content=body, headers=slack_headers(body)).status_code == 200
    for retry in (1, 2):  # Slack's retries carry the same event_id
        response = client.post("/slack", content=body, headers=slack_headers(body, retry=retry))
        assert response.status_code == 200
    (run,) = _runs(app, "slacker")
    assert run.status == "completed" and run.owner == "slack:T1:U1"
    (post,) = slack.posts()
    assert post["channel"] == "C1" and post["thread_ts"] == "17.1" and post["text"] == "the answer"
    assert post["metadata"]["event_payload"]["key"] == f"{run.id}:reply:slack"
    step = app.store.get_step(run.id, reply_step("slack"))
    assert step is not None and step.status == "completed" and step.result["delivered"] == "posted"
    assert ledger_for(app.store).pending_replies(app.deps.now() + 10**9, 10) == []


def test_a_second_message_in_the_thread_continues_the_same_conversation(
    app: Lunora, client: TestClient
) -> None:
    for n in (1, 2):
        body = slack_event(f"message {n}", event_id=f"Ev{n}", channel="C1", ts=f"17.{n}", thread_ts="17.1")
        assert client.post("/", content=body, headers=slack_headers(body)).status_code == 200
    runs = _runs(app, "slacker")
    assert len(runs) == 2 and len({r.thread_id for r in runs}) == 1


def test_github_redelivery_and_discord_interaction_start_once_and_reply(
    app: Lunora, client: TestClient, standins: tuple[SlackStandIn, GitHubStandIn, DiscordStandIn]
) -> None:
    _, github, discord = standins
    body = github_comment("please fix", repo="octo/repo", number=5)
    for _ in range(2):  # "Redeliver" in GitHub's UI sends the same X-GitHub-Delivery
        response = client.post("/github", content=body, headers=github_headers(body, delivery="d-1"))
        assert response.status_code == 200
    (comment,) = github.comments[("octo/repo", 5)]
    assert comment["body"].startswith("the answer") and "lunora-reply:" in comment["body"]
    assert len(_runs(app, "hubber")) == 1

    body = discord_command("hello", interaction_id="i-1", token="tok-1")
    for _ in range(2):
        response = client.post("/discord", content=body, headers=discord_headers(body))
        assert response.status_code == 200 and response.json() == {"type": 5}  # deferred, answered later
    assert discord.originals[("APP1", "tok-1")]["content"] == "the answer"
    assert discord.edits == 1 and len(_runs(app, "discorder")) == 1


def test_unsigned_and_forged_requests_start_nothing(app: Lunora, client: TestClient) -> None:
    body = slack_event("hi", event_id="Ev1")
    forged = slack_headers(body, secret="not-the-secret")
    assert client.post("/", content=body, headers=forged).status_code == 401
    assert client.post("/", content=body, headers={"Content-Type": "application/json"}).status_code == 401
    github = github_comment("x")
    assert client.post("/", content=github, headers=github_headers(github, secret="wrong")).status_code == 401
    assert app.store.list_runs(limit=10) == []
    assert ledger_for(app.store).reply_for("anything") is None


def test_concurrent_deliveries_of_one_event_start_one_run(app: Lunora, database_url: str) -> None:
    """Eight ingress 'replicas' (threads, each its own starter) receive the same event at once."""
    if database_url.startswith("sqlite"):
        pytest.skip("SQLite serialises writers; the race is PostgreSQL's")
    starters = [AppRunStarter(app, inline=True) for _ in range(8)]
    barrier = threading.Barrier(len(starters))
    results: list[Any] = []

    def deliver(starter: AppRunStarter) -> None:
        barrier.wait()
        results.append(starter.start(InboundRun("slacker", "slack:T1:EvRace", "hi", "slack:T1:U1", "t-race")))

    threads = [threading.Thread(target=deliver, args=(s,)) for s in starters]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(r.status for r in results) == ["duplicate"] * 7 + ["started"]
    assert len({r.run_id for r in results}) == 1 and len(_runs(app, "slacker")) == 1


def test_a_start_that_died_is_retaken_with_the_same_run_id(app: Lunora, clock: FakeClock) -> None:
    ledger = ledger_for(app.store)
    key = delivery_key("slack:T1:EvDied")
    first = ledger.claim(key, channel="slack", agent="slacker", run_id="r-died", reply=None, now=clock())
    assert first.status == "claimed"
    # The winner created the run, then died before marking the row started.
    app.agents.slacker.run(input="hi", thread_key="t-died", owner="slack:T1:U1", run_id="r-died")
    starter = AppRunStarter(app, inline=True)
    run = InboundRun("slacker", "slack:T1:EvDied", "hi", "slack:T1:U1", "t-died")
    assert starter.start(run).status == "duplicate"  # a retry within the claim's protection
    clock.advance(60_000)
    retaken = starter.start(run)
    assert (retaken.status, retaken.run_id) == ("duplicate", "r-died")  # nothing new started
    assert len(_runs(app, "slacker")) == 1


def test_a_refused_start_can_be_retried(app: Lunora, clock: FakeClock) -> None:
    """The thread refuses a second run while one is in flight (on_concurrent_run='reject'); the
    platform's retry of that event, once the thread is free, starts it under the same run id."""
    starter = AppRunStarter(app, inline=True)
    thread = app.store.ensure_thread("t-busy", owner="slack:T1:U1", agent="slacker")
    assert app.store.acquire_thread(thread.id, "someone-else")
    run = InboundRun("slacker", "slack:T1:EvBusy", "hi", "slack:T1:U1", "t-busy")
    with pytest.raises(ConflictError):
        starter.start(run)
    app.store.release_thread(thread.id, "someone-else")
    assert starter.start(run).status == "started"
    assert len(_runs(app, "slacker")) == 1


def test_a_delivery_killed_after_posting_is_not_posted_twice(
    app: Lunora, standins: tuple[SlackStandIn, GitHubStandIn, DiscordStandIn], clock: FakeClock
) -> None:
    """The worker posted, then died before recording the step: the lease expires, the repair pass
    dispatches the step again, and the retry finds its own post in the thread."""
    slack = standins[0]
    starter = AppRunStarter(app, inline=True)
    target = ReplyTarget("slack", {"team": "T1", "channel": "C1", "thread_ts": "5.5"})
    # Start the run with the reply hooks off, as if the process died at the run's end.
    hooks, app.deps.hooks = app.deps.hooks, type(app.deps.hooks)()
    try:
        result = starter.start(InboundRun("slacker", "slack:T1:EvKill", "hi", "slack:T1:U1", "t-kill",
                                          reply=target))
    finally:
        app.deps.hooks = hooks
    run_id = result.run_id
    step = reply_step("slack")
    # A worker claimed the reply step, posted, and was SIGKILLed before it recorded anything.
    claim = app.store.claim_step(run_id, step, owner="dead-worker", lease_ms=5_000, max_attempts=5)
    assert claim.outcome == "claimed"
    from slack_sdk import WebClient

    WebClient(token="xoxb-test", base_url=slack.api_url).chat_postMessage(
        channel="C1", thread_ts="5.5", text="the answer",
        metadata={"event_type": "lunora_reply", "event_payload": {"key": f"{run_id}:{step}"}},
    )
    clock.advance(3_000)
    assert sweep_replies(app.deps).dispatched == []  # the lease is live: leave it
    clock.advance(3_000)
    assert sweep_replies(app.deps).dispatched == [run_id]  # the in-process dispatcher ran it
    assert len(slack.posts()) == 1
    row = app.store.get_step(run_id, step)
    assert row is not None and row.status == "completed" and row.result["delivered"] == "already-posted"
    assert sweep_replies(app.deps, grace_ms=0).dispatched == []


def test_a_failed_run_answers_with_a_fixed_apology(
    database_url: str, settings: Settings, standins: tuple[SlackStandIn, GitHubStandIn, DiscordStandIn]
) -> None:
    from lunora_jobs import define_agent
    from lunora_jobs.models.scripted import ScriptedModel

    broken = define_agent(name="slacker", model=ScriptedModel([]), max_attempts=1, on_inbound={
        "channel": "slack", "secret_env": "T_SLACK_SECRET", "map": lambda e: e.text,
        "token_env": "T_SLACK_TOKEN"})
    app = Lunora([broken], database_url=database_url, settings=settings)
    try:
        starter = AppRunStarter(app, inline=True)
        client = TestClient(dispatch_agent_channel([broken], app=app, starter=starter))
        body = slack_event("hi", event_id="EvFail")
        assert client.post("/", content=body, headers=slack_headers(body)).status_code == 200
        (run,) = _runs(app, "slacker")
        assert run.status == "failed"
        (post,) = standins[0].posts()
        assert post["text"] == FAILED_TEXT and "ScriptExhausted" not in json.dumps(post)
    finally:
        app.close()
