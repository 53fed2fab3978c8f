"""``lunora ingress`` end to end: real uvicorn processes, real Celery workers on Redis, PostgreSQL.

- a signed Slack event starts exactly one run, also when Slack's retry reaches a second ingress
  process while the first run is going, and the reply reaches the Slack stand-in exactly once;
- a Discord interaction is deferred at once and answered by a follow-up from the worker;
- an SMTP session with an authenticated message starts a run and the answer is mailed back; one
  whose ``Authentication-Results`` comes from another authserv-id starts none;
- a worker SIGKILLed in the middle of posting a reply never makes the reply appear twice;
- unsigned and forged requests are refused, start nothing, and never get a 5xx.
"""

from __future__ import annotations

import email
import smtplib
from collections.abc import Iterator

import httpx
import pytest
from channels_mail import message, passing
from channels_signing import discord_command, discord_headers, slack_event, slack_headers
from channels_smtp import SmtpSink
from ingress_support import TERMINAL, Deployment
from private_redis import PrivateRedis

from channels.replies import reply_step


@pytest.fixture
def sink() -> Iterator[tuple[SmtpSink, int]]:
    relay = SmtpSink()
    with relay.running() as port:
        yield relay, port


@pytest.fixture
def world(pg_url: str, private_redis: PrivateRedis, sink: tuple[SmtpSink, int]) -> Iterator[Deployment]:
    deployment = Deployment(pg_url, private_redis, sink[1])
    try:
        yield deployment
    finally:
        deployment.close()


def _reply_recorded(world: Deployment, run_id: str) -> bool:
    step = world.app.store.get_step(run_id, reply_step("slack"))
    return step is not None and step.status == "completed"


def _ended(world: Deployment, agent: str) -> list[object]:
    runs = world.runs(agent)
    return runs if runs and all(r.status in TERMINAL for r in runs) else []


def test_slack_event_and_its_retry_at_another_ingress_start_one_run_and_one_reply(world: Deployment) -> None:
    first, second = world.start_ingress(), world.start_ingress()
    world.start_worker()
    body = slack_event("where is my parcel?", event_id="EvE2E1", team="T1", user="U1", channel="C1",
                       ts="9.1")
    response = httpx.post(first.url + "/slack/events", content=body, headers=slack_headers(body), timeout=10)
    assert response.status_code == 200
    (started,) = world.runs("slack_helper")
    assert started.status not in TERMINAL  # its tool takes 1.5 s
    # Slack retries (same event_id) — here at the other replica, while the run goes on.
    retry = httpx.post(second.url + "/slack/events", content=body, headers=slack_headers(body, retry=1),
                       timeout=10)
    assert retry.status_code == 200
    assert world.app.store.get_run(started.id).status not in TERMINAL
    (run,) = world.wait_for("the run ends", lambda: _ended(world, "slack_helper"))
    assert run.status == "completed" and run.owner == "slack:T1:U1"
    world.wait_for("the reply is recorded", lambda: _reply_recorded(world, run.id))
    (post,) = world.slack.posts()
    assert post["channel"] == "C1" and post["thread_ts"] == "9.1"
    assert post["text"] == "Here is your answer, from Slack."
    assert len(world.runs("slack_helper")) == 1


def test_discord_interaction_is_deferred_then_answered_by_the_worker(world: Deployment) -> None:
    ingress = world.start_ingress()
    world.start_worker()
    body = discord_command("status", "please", interaction_id="i-e2e", token="tok-e2e")
    response = httpx.post(ingress.url + "/discord", content=body, headers=discord_headers(body), timeout=10)
    assert response.status_code == 200 and response.json() == {"type": 5}
    world.wait_for("the follow-up", lambda: world.discord.originals.get(("APP1", "tok-e2e")))
    assert world.discord.originals[("APP1", "tok-e2e")]["content"] == "Here is your answer, from Discord."
    (run,) = world.runs("discord_helper")
    assert run.owner == "discord:G1:U1"


def test_smtp_mail_starts_a_run_only_when_the_trusted_mta_authenticated_it(
    world: Deployment, sink: tuple[SmtpSink, int]
) -> None:
    relay = sink[0]
    ingress = world.start_ingress()
    world.start_worker()
    forged = message(auth=[passing("mx.attacker.test")], text="forged", message_id="<forged@example.org>")
    genuine = message(auth=[passing()], text="Where is my order?", message_id="<genuine@example.org>")
    with smtplib.SMTP("127.0.0.1", ingress.smtp_port, timeout=10) as smtp:
        smtp.sendmail("alice@example.org", ["support@ours.test"], forged)
        smtp.sendmail("alice@example.org", ["support@ours.test"], genuine)
        smtp.sendmail("alice@example.org", ["support@ours.test"], genuine)  # a resend: same Message-ID
    (run,) = world.wait_for("the mail run ends", lambda: _ended(world, "mail_helper"))
    assert run.owner == "email:alice@example.org"
    (raw,) = world.wait_for("the mailed reply", lambda: list(relay.messages))
    reply = email.message_from_bytes(raw)
    assert reply["To"] == "alice@example.org" and reply["In-Reply-To"] == "<genuine@example.org>"
    assert "Here is your answer, by email." in reply.get_payload()
    assert len(world.runs("mail_helper")) == 1


def test_a_worker_killed_while_posting_the_reply_never_posts_it_twice(world: Deployment) -> None:
    world.slack.hold_posts_s = 30.0  # record the post, then keep the worker waiting for the answer
    ingress = world.start_ingress()
    worker = world.start_worker()
    body = slack_event("hi", event_id="EvKill", team="T1", user="U1", channel="C1", ts="9.2")
    response = httpx.post(ingress.url + "/", content=body, headers=slack_headers(body), timeout=10)
    assert response.status_code == 200
    world.wait_for("the reply is being posted", world.slack.posts, timeout=60)
    worker.kill()  # SIGKILL the worker and its pool mid-delivery: nothing is recorded, nothing acked
    world.slack.hold_posts_s = 0.0
    world.start_worker()
    (run,) = world.runs("slack_helper")
    # The lease lapses (2 x LUNORA_REPLY_TIMEOUT_S + 5 s); the ingress's repair pass re-dispatches.
    world.wait_for("the retried reply is recorded", lambda: _reply_recorded(world, run.id), timeout=60)
    step = world.app.store.get_step(run.id, reply_step("slack"))
    assert step.result["delivered"] == "already-posted" and step.attempt == 2
    assert len(world.slack.posts()) == 1


def test_unsigned_and_forged_requests_are_refused_without_a_run_or_a_5xx(world: Deployment) -> None:
    ingress = world.start_ingress()
    body = slack_event("hi", event_id="EvForged")
    attempts = [
        {},
        {"X-Slack-Signature": "v0=" + "0" * 64, "X-Slack-Request-Timestamp": "1"},
        slack_headers(body, secret="guessed"),
        slack_headers(body, timestamp=1),  # stale
        {**discord_headers(body), "X-Signature-Ed25519": "zz"},
        {"X-Hub-Signature-256": "sha256=nothex", "X-GitHub-Event": "ping", "X-GitHub-Delivery": "d"},
    ]
    for headers in attempts:
        response = httpx.post(ingress.url + "/", content=body, headers=headers, timeout=10)
        assert response.status_code == 401, (headers, response.status_code)
    assert httpx.post(ingress.url + "/", content=b"x" * (2 * 1024 * 1024), timeout=10).status_code == 413
    assert world.runs() == []
