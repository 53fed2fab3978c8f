"""Real request signing for the channel tests: slack-sdk's signer, ``hmac``, a PyNaCl key pair."""

from __future__ import annotations

import json
import time
from typing import Any

from nacl.signing import SigningKey
from slack_sdk.signature import SignatureVerifier

from channels.verify import github_signature

SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
GITHUB_SECRET = "It's a Secret to Everybody"
DISCORD_KEY = SigningKey(bytes(range(32)))
DISCORD_PUBLIC_HEX = DISCORD_KEY.verify_key.encode().hex()


def slack_headers(
    body: bytes, *, secret: str = SLACK_SECRET, timestamp: int | None = None, retry: int | None = None
) -> dict[str, str]:
    """Headers Slack would send for ``body`` (signed by slack-sdk's own signer)."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    assert signature is not None
    headers = {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": signature,
        "Content-Type": "application/json",
    }
    if retry is not None:
        headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
    return headers


def github_headers(
    body: bytes,
    *,
    secret: str = GITHUB_SECRET,
    event: str = "issue_comment",
    delivery: str = "72d3162e-cc78-11e3-81ab-4c9367dc0958",
) -> dict[str, str]:
    """Headers GitHub would send for ``body``."""
    return {
        "X-Hub-Signature-256": github_signature(body, secret),
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "Content-Type": "application/json",
    }


def discord_headers(
    body: bytes, *, key: SigningKey = DISCORD_KEY, timestamp: int | None = None
) -> dict[str, str]:
    """Headers Discord would send for ``body`` (Ed25519 over timestamp + body)."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = key.sign(ts.encode() + body).signature.hex()
    return {"X-Signature-Ed25519": signature, "X-Signature-Timestamp": ts, "Content-Type": "application/json"}


def slack_event(
    text: str = "hello bot",
    *,
    event_id: str = "Ev0001",
    team: str = "T0001",
    user: str = "U0002",
    channel: str = "C0003",
    ts: str = "1700000000.000100",
    **event: Any,
) -> bytes:
    """An Events API ``event_callback`` body."""
    inner = {"type": "app_mention", "user": user, "text": text, "channel": channel, "ts": ts, **event}
    return json.dumps(
        {
            "type": "event_callback",
            "team_id": team,
            "api_app_id": "A1",
            "event_id": event_id,
            "event_time": 1700000000,
            "event": inner,
        }
    ).encode()


def github_comment(
    body: str = "please help",
    *,
    installation: int | None = 42,
    sender: int = 7,
    repo: str = "octo/repo",
    number: int = 5,
    sender_type: str = "User",
) -> bytes:
    """An ``issue_comment`` delivery body."""
    payload: dict[str, Any] = {
        "action": "created",
        "issue": {"number": number, "title": "Bug", "body": "it breaks"},
        "comment": {"id": 99, "body": body},
        "repository": {"full_name": repo, "id": 1},
        "sender": {"login": "octocat", "id": sender, "type": sender_type},
    }
    if installation is not None:
        payload["installation"] = {"id": installation}
    return json.dumps(payload).encode()


def discord_command(
    *words: str,
    interaction_id: str = "111",
    guild: str | None = "G1",
    user: str = "U1",
    token: str = "tok-abc",
) -> bytes:
    """An APPLICATION_COMMAND interaction body."""
    payload: dict[str, Any] = {
        "type": 2,
        "id": interaction_id,
        "application_id": "APP1",
        "token": token,
        "channel_id": "CH1",
        "data": {
            "name": "ask",
            "options": [{"name": f"o{i}", "type": 3, "value": w} for i, w in enumerate(words)],
        },
    }
    if guild is not None:
        payload |= {"guild_id": guild, "member": {"user": {"id": user, "username": "someone"}}}
    else:
        payload["user"] = {"id": user}
    return json.dumps(payload).encode()
