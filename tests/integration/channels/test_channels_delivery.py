"""The reply deliverers against local servers speaking Slack's, GitHub's and Discord's wire
formats, and a real SMTP server (aiosmtpd) as the relay."""

from __future__ import annotations

from collections.abc import Iterator
from email import message_from_bytes, policy

import pytest
from channel_standins import DiscordStandIn, GitHubStandIn, SlackStandIn, running
from channels_smtp import SmtpSink

from channels.delivery import (
    DeliveryError,
    DiscordDeliverer,
    EmailDeliverer,
    GitHubDeliverer,
    Reply,
    SlackDeliverer,
)
from channels.inbound import ReplyTarget

SLACK_TARGET = ReplyTarget("slack", {"team": "T1", "channel": "C1", "thread_ts": "1.5"})


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with running(SlackStandIn()) as server:
        yield server


def test_slack_posts_in_the_thread_with_the_key(slack: SlackStandIn) -> None:
    deliverer = SlackDeliverer(slack.api_url)
    assert deliverer.deliver(Reply(SLACK_TARGET, "the answer", "run-1:reply", token="xoxb-test")) == "posted"
    (post,) = slack.posts()
    assert post["channel"] == "C1" and post["thread_ts"] == "1.5" and post["text"] == "the answer"
    assert post["metadata"] == {"event_type": "lunora_reply", "event_payload": {"key": "run-1:reply"}}


def test_slack_retry_finds_its_earlier_post(slack: SlackStandIn) -> None:
    deliverer = SlackDeliverer(slack.api_url)
    deliverer.deliver(Reply(SLACK_TARGET, "the answer", "run-1:reply", token="xoxb-test"))
    again = deliverer.deliver(Reply(SLACK_TARGET, "the answer", "run-1:reply", retry=True, token="xoxb-test"))
    assert again == "already-posted" and len(slack.posts()) == 1
    other = deliverer.deliver(Reply(SLACK_TARGET, "another", "run-2:reply", retry=True, token="xoxb-test"))
    assert other == "posted" and len(slack.posts()) == 2


def test_slack_retry_pages_through_a_long_thread(slack: SlackStandIn) -> None:
    deliverer = SlackDeliverer(slack.api_url)
    deliverer.deliver(Reply(SLACK_TARGET, "first", "run-0:reply", token="xoxb-test"))
    for i in range(250):
        deliverer.deliver(Reply(SLACK_TARGET, f"filler {i}", f"filler-{i}", token="xoxb-test"))
    again = deliverer.deliver(Reply(SLACK_TARGET, "first", "run-0:reply", retry=True, token="xoxb-test"))
    assert again == "already-posted"


def test_slack_refusal_is_a_delivery_error(slack: SlackStandIn) -> None:
    with pytest.raises(DeliveryError, match="invalid_auth"):
        SlackDeliverer(slack.api_url).deliver(Reply(SLACK_TARGET, "x", "k", token="xoxb-wrong"))
    with pytest.raises(DeliveryError, match="token"):
        SlackDeliverer(slack.api_url).deliver(Reply(SLACK_TARGET, "x", "k"))


def test_github_comment_with_marker_and_retry() -> None:
    with running(GitHubStandIn()) as github:
        deliverer = GitHubDeliverer(github.url)
        target = ReplyTarget("github", {"repo": "octo/repo", "number": 5})
        for i in range(120):  # more than one page of other comments
            github.comments.setdefault(("octo/repo", 5), []).append({"id": i, "body": f"c{i}"})
        assert deliverer.deliver(Reply(target, "fixed it", "run-9:reply", token="ghs_test")) == "posted"
        posted = github.comments[("octo/repo", 5)][-1]["body"]
        assert posted.startswith("fixed it") and posted.endswith("<!-- lunora-reply:run-9:reply -->")
        again = deliverer.deliver(Reply(target, "fixed it", "run-9:reply", retry=True, token="ghs_test"))
        assert again == "already-posted" and len(github.comments[("octo/repo", 5)]) == 121
        with pytest.raises(DeliveryError):
            deliverer.deliver(Reply(target, "x", "k", token="bad"))


def test_discord_edits_the_deferred_response_idempotently() -> None:
    with running(DiscordStandIn()) as discord:
        deliverer = DiscordDeliverer(discord.url)
        target = ReplyTarget("discord", {"application_id": "APP1", "token": "tok"})
        deliverer.deliver(Reply(target, "x" * 2500, "run-3:reply"))
        deliverer.deliver(Reply(target, "x" * 2500, "run-3:reply", retry=True))
        assert list(discord.originals) == [("APP1", "tok")]
        assert len(discord.originals[("APP1", "tok")]["content"]) == 2000


def test_email_reply_is_threaded_with_a_stable_message_id() -> None:
    sink = SmtpSink()
    with sink.running() as port:
        deliverer = EmailDeliverer("127.0.0.1", port, "agent@ours.test")
        target = ReplyTarget(
            "email",
            {
                "to": "alice@example.org",
                "subject": "Re: Help",
                "in_reply_to": "<m1@example.org>",
                "references": ["<m1@example.org>"],
            },
        )
        deliverer.deliver(Reply(target, "Here you go.", "run-4:reply"))
        deliverer.deliver(Reply(target, "Here you go.", "run-4:reply", retry=True))
    first, second = (message_from_bytes(m, policy=policy.default) for m in sink.messages)
    assert first["To"] == "alice@example.org" and first["In-Reply-To"] == "<m1@example.org>"
    assert first["Auto-Submitted"] == "auto-replied" and "Here you go." in first.get_content()
    assert first["Message-ID"] == second["Message-ID"]
