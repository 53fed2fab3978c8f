"""Hypothesis strategies for fuzzing the webhook app: requests with random headers and bodies,
some validly signed (with the real signers), most not. Each generated request says whether it
carries a valid signature and, if it is a structured event, which dedupe key a run would get."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from channels_signing import (
    DISCORD_KEY,
    GITHUB_SECRET,
    SLACK_SECRET,
    discord_headers,
    github_headers,
    slack_headers,
)
from hypothesis import strategies as st
from nacl.signing import SigningKey

SIGNATURE_HEADERS = (
    "X-Slack-Signature",
    "X-Slack-Request-Timestamp",
    "X-Hub-Signature-256",
    "X-GitHub-Event",
    "X-GitHub-Delivery",
    "X-Signature-Ed25519",
    "X-Signature-Timestamp",
    "X-Slack-Retry-Num",
)
MODES = ("valid", "valid", "wrong_secret", "stale", "future", "tampered", "missing", "garbage")

_ids = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", min_size=1, max_size=12)
_latin = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=255), max_size=80)
_junk_text = st.text(max_size=200)


@dataclass(frozen=True)
class FuzzRequest:
    """One request to send, and the ground truth about it."""

    body: bytes
    headers: list[tuple[str, str]]
    validly_signed: bool
    dedupe_key: str | None
    """The key a run would be claimed under (structured, signed, identified events only)."""


@st.composite
def _slack_body(draw: st.DrawFn) -> tuple[bytes, str | None]:
    if draw(st.booleans()):
        event_id, team, user = draw(_ids), draw(_ids), draw(_ids)
        event = {
            "type": draw(st.sampled_from(["app_mention", "message"])),
            "user": user,
            "text": draw(_junk_text),
            "channel": "C" + draw(_ids),
            "ts": "1.0",
        }
        payload = {"type": "event_callback", "team_id": team, "event_id": event_id, "event": event}
        return json.dumps(payload).encode(), f"slack:{team}:{event_id}"
    if draw(st.booleans()):
        return json.dumps({"type": "url_verification", "challenge": draw(_junk_text)}).encode(), None
    return draw(st.text(max_size=300)).encode(), None  # Slack bodies are always UTF-8


@st.composite
def _github_body(draw: st.DrawFn) -> tuple[bytes, str | None, str, str]:
    delivery = draw(_ids)
    event = draw(st.sampled_from(["issue_comment", "issues", "ping", "push"]))
    if draw(st.booleans()):
        payload: dict[str, Any] = {
            "action": "created",
            "issue": {"number": draw(st.integers(1, 10_000)), "body": draw(_junk_text)},
            "comment": {"body": draw(_junk_text)},
            "repository": {"full_name": "o/r"},
            "installation": {"id": draw(st.integers(1, 10**9))},
            "sender": {"id": draw(st.integers(1, 10**9)), "type": "User"},
        }
        key = None if event == "ping" else f"github:{delivery}"
        return json.dumps(payload).encode(), key, event, delivery
    return draw(st.binary(max_size=600)), None, event, delivery


@st.composite
def _discord_body(draw: st.DrawFn) -> tuple[bytes, str | None]:
    kind = draw(st.sampled_from([1, 2, 2, 3]))
    interaction = draw(_ids)
    if draw(st.booleans()):
        payload = {
            "type": kind,
            "id": interaction,
            "application_id": "APP",
            "token": draw(_ids),
            "guild_id": draw(_ids),
            "member": {"user": {"id": draw(_ids)}},
            "data": {"name": "ask", "custom_id": "x", "options": [{"name": "q", "value": draw(_junk_text)}]},
        }
        return json.dumps(payload).encode(), (f"discord:{interaction}" if kind != 1 else None)
    return draw(st.binary(max_size=600)), None


@st.composite
def fuzz_request(draw: st.DrawFn) -> FuzzRequest:
    """A request for a random channel (or none) in a random signing mode with random extra headers."""
    channel = draw(st.sampled_from(["slack", "github", "discord", "none"]))
    mode = draw(st.sampled_from(MODES))
    now = int(time.time())
    timestamp = {"stale": now - 1000, "future": now + 1000}.get(mode, now)
    key: str | None = None
    headers: dict[str, str]
    if channel == "slack":
        body, key = draw(_slack_body())
        secret = "not-the-secret" if mode == "wrong_secret" else SLACK_SECRET
        headers = slack_headers(body, secret=secret, timestamp=timestamp)
    elif channel == "github":
        body, key, event, delivery = draw(_github_body())
        secret = "not-the-secret" if mode == "wrong_secret" else GITHUB_SECRET
        headers = github_headers(body, secret=secret, event=event, delivery=delivery)
    elif channel == "discord":
        body, key = draw(_discord_body())
        signer = SigningKey(bytes(32)) if mode == "wrong_secret" else DISCORD_KEY
        headers = discord_headers(body, key=signer, timestamp=timestamp)
    else:
        body, headers = draw(st.binary(max_size=600)), {}
    # ground truth: does the request carry a signature the ingress must accept?
    signed = channel != "none" and (mode == "valid" or (channel == "github" and mode in ("stale", "future")))
    if mode == "tampered" and channel != "none":
        body += b" "
        signed = False
    elif mode == "missing" and channel != "none":
        present = sorted(name for name in headers if name != "Content-Type")
        for name in draw(st.lists(st.sampled_from(present), min_size=1, unique=True)):
            del headers[name]
        # GitHub signs no timestamp: without its event or delivery header a request is still signed,
        # but malformed (400, no run); without the signature header it is unsigned
        signed = channel == "github" and "X-Hub-Signature-256" in headers
        key = None
    elif mode == "garbage":
        own = {
            "slack": "X-Slack-Signature",
            "github": "X-Hub-Signature-256",
            "discord": "X-Signature-Ed25519",
        }
        names = draw(st.lists(st.sampled_from(SIGNATURE_HEADERS), max_size=3))
        for name in ([own[channel]] if channel in own else []) + names:
            headers[name] = draw(_latin)
        signed = False  # the channel's own signature is now junk (that it verifies is beyond unlikely)
    pairs = list(headers.items())
    extra_names = st.text(alphabet="abdfgxyz-", min_size=1, max_size=12)
    if not signed:  # unsigned requests also get signature header names with junk values
        extra_names = st.one_of(st.sampled_from(SIGNATURE_HEADERS), extra_names)
    pairs += draw(st.lists(st.tuples(extra_names, _latin), max_size=4))
    return FuzzRequest(body, pairs, signed, key if signed else None)
