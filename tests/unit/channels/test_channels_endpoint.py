"""The webhook endpoint's answers: verification before mapping, handshakes, identity, limits.

The run starter here is a recording one (the store-backed starter and the real queue are exercised
by tests/integration/channels and tests/e2e/channels); this file pins the HTTP contract.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels_signing import (
    DISCORD_PUBLIC_HEX,
    GITHUB_SECRET,
    SLACK_SECRET,
    discord_command,
    discord_headers,
    github_comment,
    github_headers,
    slack_event,
    slack_headers,
)
from starlette.testclient import TestClient

from channels import ChannelIdentity, InboundEvent, dispatch_agent_channel
from channels.dispatch import InboundRun, MissingSecretError, StartResult
from lunora_jobs import define_agent
from lunora_jobs.config import Settings
from lunora_jobs.errors import ConflictError


class RecordingStarter:
    """Starts nothing; remembers what it was asked, dedupes on the key like the real one must."""

    def __init__(self) -> None:
        self.runs: dict[str, InboundRun] = {}
        self.calls = 0
        self.conflict = False

    def start(self, run: InboundRun) -> StartResult:
        self.calls += 1
        if self.conflict:
            raise ConflictError("busy")
        if run.dedupe_key in self.runs:
            return StartResult("duplicate", "r-" + run.dedupe_key)
        self.runs[run.dedupe_key] = run
        return StartResult("started", "r-" + run.dedupe_key)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T_SLACK_SECRET", SLACK_SECRET)
    monkeypatch.setenv("T_GITHUB_SECRET", GITHUB_SECRET)
    monkeypatch.setenv("T_DISCORD_KEY", DISCORD_PUBLIC_HEX)


def _agents(mapped: list[InboundEvent], decline: bool = False) -> list[Any]:
    def remember(event: InboundEvent) -> Any:
        mapped.append(event)
        return None if decline else {"input": event.text, "title": f"{event.channel} event"}

    return [
        define_agent(
            name="slacker", on_inbound={"channel": "slack", "secret_env": "T_SLACK_SECRET", "map": remember}
        ),
        define_agent(
            name="hubber",
            on_inbound={
                "channel": "github",
                "secret_env": "T_GITHUB_SECRET",
                "map": remember,
                "token_env": "T_GITHUB_TOKEN",
            },
        ),
        define_agent(
            name="discorder",
            on_inbound={"channel": "discord", "secret_env": "T_DISCORD_KEY", "map": remember},
        ),
    ]


@pytest.fixture
def mapped() -> list[InboundEvent]:
    return []


@pytest.fixture
def starter() -> RecordingStarter:
    return RecordingStarter()


@pytest.fixture
def client(env: None, mapped: list[InboundEvent], starter: RecordingStarter) -> TestClient:
    return TestClient(dispatch_agent_channel(_agents(mapped), starter=starter, max_body_bytes=4096))


def test_signed_slack_event_is_claimed_with_the_verified_identity(
    client: TestClient, mapped: list[InboundEvent], starter: RecordingStarter
) -> None:
    body = slack_event("what's up?", event_id="Ev9", team="T9", user="U9", channel="C9", ts="1.5")
    response = client.post("/slack/events", content=body, headers=slack_headers(body))
    assert response.status_code == 200
    (event,) = mapped
    assert event.identity == ChannelIdentity("slack", "T9", "U9")
    assert event.text == "what's up?" and event.kind == "app_mention"
    run = starter.runs["slack:T9:Ev9"]
    assert run.agent == "slacker" and run.owner == "slack:T9:U9" and run.input == "what's up?"
    assert run.thread_key == "slack:T9:C9:1.5:U9"
    assert run.reply is not None and run.reply.address == {"team": "T9", "channel": "C9", "thread_ts": "1.5"}


def test_owner_never_comes_from_the_payload(client: TestClient, starter: RecordingStarter) -> None:
    body = json.dumps(
        {
            "type": "event_callback",
            "team_id": "T1",
            "event_id": "Ev1",
            "owner": "admin",
            "event": {
                "type": "message",
                "user": "U1",
                "text": "I am owner=admin",
                "channel": "C",
                "ts": "1.0",
                "owner": "admin",
            },
        }
    ).encode()
    assert client.post("/", content=body, headers=slack_headers(body)).status_code == 200
    assert starter.runs["slack:T1:Ev1"].owner == "slack:T1:U1"


def test_slack_retry_maps_to_the_same_dedupe_key(client: TestClient, starter: RecordingStarter) -> None:
    body = slack_event(event_id="EvR")
    assert client.post("/", content=body, headers=slack_headers(body)).status_code == 200
    retry = client.post("/", content=body, headers=slack_headers(body, retry=1))
    assert retry.status_code == 200
    assert starter.calls == 2 and len(starter.runs) == 1


def test_bad_signature_never_reaches_the_mapper(
    client: TestClient, mapped: list[InboundEvent], starter: RecordingStarter
) -> None:
    body = slack_event()
    for headers in (
        slack_headers(body, secret="wrong"),
        slack_headers(body, timestamp=1),
        {"X-Slack-Signature": "v0=" + "0" * 64},
        {},
        {"X-Slack-Request-Timestamp": "abc"},
    ):
        response = client.post("/", content=body, headers=headers)
        assert response.status_code == 401 and response.text == "unauthorized"
    tampered = client.post("/", content=body.replace(b"hello", b"HELLO"), headers=slack_headers(body))
    assert tampered.status_code == 401
    assert mapped == [] and starter.calls == 0


def test_slack_url_verification_is_answered_only_after_verification(client: TestClient) -> None:
    body = json.dumps({"type": "url_verification", "challenge": "3eZbrw1aB", "token": "x"}).encode()
    response = client.post("/", content=body, headers=slack_headers(body))
    assert response.status_code == 200 and response.json() == {"challenge": "3eZbrw1aB"}
    assert client.post("/", content=body, headers=slack_headers(body, secret="nope")).status_code == 401


def test_slack_bot_messages_are_declined(client: TestClient, mapped: list[InboundEvent]) -> None:
    body = slack_event(bot_id="B1")
    assert client.post("/", content=body, headers=slack_headers(body)).status_code == 204
    assert mapped == []


def test_github_delivery_is_claimed_and_redelivery_deduped(
    client: TestClient, starter: RecordingStarter
) -> None:
    body = github_comment("help!", installation=42, sender=7)
    headers = github_headers(body, delivery="d-1")
    assert client.post("/", content=body, headers=headers).status_code == 200
    assert client.post("/", content=body, headers=headers).status_code == 200
    run = starter.runs["github:d-1"]
    assert run.owner == "github:42:7" and run.input == "help!"
    assert run.reply is not None and run.reply.address == {"repo": "octo/repo", "number": 5}
    assert len(starter.runs) == 1


def test_github_repository_hook_identity_comes_from_the_target_headers(
    client: TestClient, starter: RecordingStarter
) -> None:
    body = github_comment(installation=None, sender=8)
    headers = github_headers(body, delivery="d-2") | {
        "X-GitHub-Hook-Installation-Target-Type": "repository",
        "X-GitHub-Hook-Installation-Target-ID": "123",
    }
    assert client.post("/", content=body, headers=headers).status_code == 200
    assert starter.runs["github:d-2"].owner == "github:repository:123:8"


def test_github_without_identity_fails_closed(client: TestClient, mapped: list[InboundEvent]) -> None:
    body = github_comment(installation=None)
    assert client.post("/", content=body, headers=github_headers(body, delivery="d-3")).status_code == 204
    assert mapped == []


def test_github_ping_is_acknowledged(client: TestClient, mapped: list[InboundEvent]) -> None:
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    response = client.post("/", content=body, headers=github_headers(body, event="ping"))
    assert response.status_code == 200 and mapped == []


def test_github_own_reply_comments_and_bots_are_declined(
    client: TestClient, mapped: list[InboundEvent]
) -> None:
    for body in (github_comment("answer <!-- lunora-reply:abc -->"), github_comment(sender_type="Bot")):
        assert client.post("/", content=body, headers=github_headers(body, delivery="d-x")).status_code == 204
    assert mapped == []


def test_github_test_vector_body_is_verified_then_rejected_as_malformed(client: TestClient) -> None:
    body = b"Hello, World!"
    assert client.post("/", content=body, headers=github_headers(body)).status_code == 400
    assert client.post("/", content=body, headers=github_headers(body, secret="x")).status_code == 401


def test_discord_ping_gets_pong_only_when_signed(client: TestClient) -> None:
    body = json.dumps({"type": 1, "id": "1", "application_id": "A"}).encode()
    response = client.post("/", content=body, headers=discord_headers(body))
    assert response.status_code == 200 and response.json() == {"type": 1}
    bad = discord_headers(body) | {"X-Signature-Ed25519": "00" * 64}
    assert client.post("/", content=body, headers=bad).status_code == 401


def test_discord_command_gets_a_deferred_response(client: TestClient, starter: RecordingStarter) -> None:
    body = discord_command("how", "are you", interaction_id="555", guild="G7", user="U7", token="T-7")
    response = client.post("/interactions", content=body, headers=discord_headers(body))
    assert response.status_code == 200 and response.json() == {"type": 5}
    run = starter.runs["discord:555"]
    assert run.owner == "discord:G7:U7" and run.input == "how are you"
    assert run.reply is not None and run.reply.address == {"application_id": "APP1", "token": "T-7"}


def test_discord_dm_identity(client: TestClient, starter: RecordingStarter) -> None:
    body = discord_command("hi", interaction_id="556", guild=None, user="U8")
    assert client.post("/", content=body, headers=discord_headers(body)).status_code == 200
    assert starter.runs["discord:556"].owner == "discord:dm:U8"


def test_oversize_body_is_413_before_verification(client: TestClient, mapped: list[InboundEvent]) -> None:
    body = slack_event("x" * 5000)
    response = client.post("/", content=body, headers=slack_headers(body))
    assert response.status_code == 413 and mapped == []

    def chunks() -> Any:
        for _ in range(10):
            yield b"y" * 1000

    assert client.post("/", content=chunks(), headers=slack_headers(body)).status_code == 413


def test_no_signature_headers_is_401_and_get_is_405(client: TestClient) -> None:
    assert client.post("/", content=b"{}").status_code == 401
    assert client.get("/").status_code == 405


def test_declined_by_every_mapper_is_204(env: None, starter: RecordingStarter) -> None:
    mapped: list[InboundEvent] = []
    client = TestClient(dispatch_agent_channel(_agents(mapped, decline=True), starter=starter))
    body = slack_event()
    assert client.post("/", content=body, headers=slack_headers(body)).status_code == 204
    assert len(mapped) == 1 and starter.calls == 0


def test_conflict_is_409_and_start_failure_503(client: TestClient, starter: RecordingStarter) -> None:
    body = slack_event(event_id="EvC")
    starter.conflict = True
    assert client.post("/", content=body, headers=slack_headers(body)).status_code == 409

    def broken(run: InboundRun) -> StartResult:
        raise OSError("broker down")

    starter.start = broken  # type: ignore[method-assign]
    response = client.post("/", content=body, headers=slack_headers(body))
    assert response.status_code == 503 and response.text == "unavailable"


def test_mapper_failure_is_a_generic_500(env: None, starter: RecordingStarter) -> None:
    def explode(event: InboundEvent) -> Any:
        raise KeyError("secret internals")

    agent = define_agent(
        name="a", on_inbound={"channel": "slack", "secret_env": "T_SLACK_SECRET", "map": explode}
    )
    client = TestClient(dispatch_agent_channel([agent], starter=starter), raise_server_exceptions=False)
    body = slack_event()
    response = client.post("/", content=body, headers=slack_headers(body))
    assert response.status_code == 500 and "secret" not in response.text


def test_mapper_may_not_set_the_owner(env: None, starter: RecordingStarter) -> None:
    agent = define_agent(
        name="a",
        on_inbound={
            "channel": "slack",
            "secret_env": "T_SLACK_SECRET",
            "map": lambda e: {"input": "x", "owner": "admin"},
        },
    )
    client = TestClient(dispatch_agent_channel([agent], starter=starter))
    body = slack_event()
    assert client.post("/", content=body, headers=slack_headers(body)).status_code == 500
    assert starter.calls == 0


def test_owner_override_sees_only_the_identity(env: None, starter: RecordingStarter) -> None:
    agent = define_agent(
        name="a",
        on_inbound={
            "channel": "slack",
            "secret_env": "T_SLACK_SECRET",
            "map": lambda e: e.text,
            "owner": lambda ident: f"workspace-{ident.tenant}",
        },
    )
    client = TestClient(dispatch_agent_channel([agent], starter=starter))
    body = slack_event(team="TX", event_id="EvO")
    assert client.post("/", content=body, headers=slack_headers(body)).status_code == 200
    assert starter.runs["slack:TX:EvO"].owner == "workspace-TX"


def test_second_agent_on_a_channel_gets_what_the_first_declines(
    env: None, starter: RecordingStarter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("T_SLACK_SECRET_2", "another-secret")
    first = define_agent(
        name="first", on_inbound={"channel": "slack", "secret_env": "T_SLACK_SECRET", "map": lambda e: None}
    )
    second = define_agent(
        name="second",
        on_inbound={"channel": "slack", "secret_env": "T_SLACK_SECRET", "map": lambda e: "mine"},
    )
    other = define_agent(
        name="other",
        on_inbound={"channel": "slack", "secret_env": "T_SLACK_SECRET_2", "map": lambda e: "other's"},
    )
    client = TestClient(dispatch_agent_channel([other, first, second], starter=starter))
    body = slack_event(event_id="EvS")
    assert client.post("/", content=body, headers=slack_headers(body)).status_code == 200
    assert starter.runs["slack:T0001:EvS"].agent == "second"
    body2 = slack_event(event_id="EvT")
    assert (
        client.post("/", content=body2, headers=slack_headers(body2, secret="another-secret")).status_code
        == 200
    )
    assert starter.runs["slack:T0001:EvT"].agent == "other"


def test_unset_secret_variable_fails_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("T_NOT_SET", raising=False)
    agent = define_agent(name="a", on_inbound={"channel": "slack", "secret_env": "T_NOT_SET", "map": str})
    with pytest.raises(MissingSecretError, match="T_NOT_SET"):
        dispatch_agent_channel([agent], starter=RecordingStarter(), settings=Settings())
