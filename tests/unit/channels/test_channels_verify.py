"""The verifiers against real signatures: valid, tampered, wrong secret, stale/future, malformed."""

from __future__ import annotations

import time

import pytest
from channels_signing import (
    DISCORD_KEY,
    DISCORD_PUBLIC_HEX,
    GITHUB_SECRET,
    SLACK_SECRET,
    discord_headers,
    github_headers,
    slack_headers,
)
from nacl.signing import SigningKey

from channels import verify_discord, verify_github, verify_slack

BODY = b'{"type":"event_callback","event":{"text":"hi"}}'
NOW = 1_700_000_000


# --- Slack ---------------------------------------------------------------------------------------


def test_slack_valid_signature_passes() -> None:
    assert verify_slack(slack_headers(BODY, timestamp=NOW), BODY, SLACK_SECRET, now=NOW)


def test_slack_headers_are_case_insensitive_and_pairs_work() -> None:
    headers = {k.lower(): v for k, v in slack_headers(BODY, timestamp=NOW).items()}
    assert verify_slack(headers, BODY, SLACK_SECRET, now=NOW)
    assert verify_slack(list(headers.items()), BODY, SLACK_SECRET, now=NOW)


@pytest.mark.parametrize("skew", [-300, 300])
def test_slack_edge_of_the_window_passes(skew: int) -> None:
    assert verify_slack(slack_headers(BODY, timestamp=NOW + skew), BODY, SLACK_SECRET, now=NOW)


@pytest.mark.parametrize("skew", [-301, 301, -86_400, 86_400])
def test_slack_stale_and_future_timestamps_fail(skew: int) -> None:
    assert not verify_slack(slack_headers(BODY, timestamp=NOW + skew), BODY, SLACK_SECRET, now=NOW)


def test_slack_tampered_body_and_wrong_secret_fail() -> None:
    headers = slack_headers(BODY, timestamp=NOW)
    assert not verify_slack(headers, BODY.replace(b"hi", b"ho"), SLACK_SECRET, now=NOW)
    assert not verify_slack(headers, BODY, SLACK_SECRET + "x", now=NOW)
    assert not verify_slack(headers, BODY, "", now=NOW)
    assert not verify_slack(headers, BODY, None, now=NOW)


@pytest.mark.parametrize("drop", ["X-Slack-Request-Timestamp", "X-Slack-Signature"])
def test_slack_missing_header_fails(drop: str) -> None:
    headers = slack_headers(BODY, timestamp=NOW)
    del headers[drop]
    assert not verify_slack(headers, BODY, SLACK_SECRET, now=NOW)


@pytest.mark.parametrize(
    "timestamp",
    [
        "abc",
        "",
        " 1700000000",
        "1_700_000_000",
        "-1700000000",
        "1e9",
        "99999999999999999999",
        "\uff11\uff17" + "\uff10" * 8,
    ],
)
def test_slack_malformed_timestamp_is_a_refusal(timestamp: str) -> None:
    headers = slack_headers(BODY, timestamp=NOW) | {"X-Slack-Request-Timestamp": timestamp}
    assert verify_slack(headers, BODY, SLACK_SECRET, now=NOW) is False


@pytest.mark.parametrize(
    "signature",
    [
        "v0=",
        "v0=abc",
        "v0=" + "g" * 64,
        "v0=" + "a" * 63,
        "v1=" + "a" * 64,
        "v0=" + "é" * 64,
        "V0=" + "a" * 64,
        "x" * 5000,
    ],
)
def test_slack_malformed_signature_is_a_refusal(signature: str) -> None:
    headers = slack_headers(BODY, timestamp=NOW) | {"X-Slack-Signature": signature}
    assert verify_slack(headers, BODY, SLACK_SECRET, now=NOW) is False


def test_slack_duplicated_signature_header_fails() -> None:
    headers = list(slack_headers(BODY, timestamp=NOW).items())
    headers.append(("x-slack-signature", dict(headers)["X-Slack-Signature"]))
    assert not verify_slack(headers, BODY, SLACK_SECRET, now=NOW)


def test_slack_non_utf8_body_is_a_refusal() -> None:
    body = b"\xff\xfe"
    ts = str(NOW)
    import hashlib
    import hmac

    signature = (
        "v0="
        + hmac.new(SLACK_SECRET.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
    )
    headers = {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}
    assert verify_slack(headers, body, SLACK_SECRET, now=NOW) is False


def test_slack_uses_the_wall_clock_by_default() -> None:
    assert verify_slack(slack_headers(BODY), BODY, SLACK_SECRET)
    assert not verify_slack(slack_headers(BODY, timestamp=int(time.time()) - 600), BODY, SLACK_SECRET)


# --- GitHub --------------------------------------------------------------------------------------


def test_github_published_test_vector() -> None:
    # https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert verify_github({"X-Hub-Signature-256": expected}, b"Hello, World!", GITHUB_SECRET)
    assert verify_github(
        {"x-hub-signature-256": expected.upper().replace("SHA256", "sha256")}, b"Hello, World!", GITHUB_SECRET
    )


def test_github_tampered_wrong_secret_and_missing_fail() -> None:
    headers = github_headers(b"Hello, World!")
    assert verify_github(headers, b"Hello, World!", GITHUB_SECRET)
    assert not verify_github(headers, b"Hello, World?", GITHUB_SECRET)
    assert not verify_github(headers, b"Hello, World!", "another secret")
    assert not verify_github({}, b"Hello, World!", GITHUB_SECRET)
    assert not verify_github(headers, b"Hello, World!", None)


@pytest.mark.parametrize(
    "signature",
    [
        "sha256=",
        "sha256=zz",
        "sha1=" + "a" * 40,
        "sha256=" + "a" * 63,
        "sha256=" + "a" * 65,
        "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        "sha256=" + "ä" * 64,
    ],
)
def test_github_malformed_signature_is_a_refusal(signature: str) -> None:
    assert verify_github({"X-Hub-Signature-256": signature}, b"Hello, World!", GITHUB_SECRET) is False


# --- Discord -------------------------------------------------------------------------------------


def test_discord_valid_signature_passes() -> None:
    assert verify_discord(discord_headers(BODY, timestamp=NOW), BODY, DISCORD_PUBLIC_HEX, now=NOW)


def test_discord_tampered_body_and_wrong_key_fail() -> None:
    headers = discord_headers(BODY, timestamp=NOW)
    assert not verify_discord(headers, BODY + b" ", DISCORD_PUBLIC_HEX, now=NOW)
    other = SigningKey.generate().verify_key.encode().hex()
    assert not verify_discord(headers, BODY, other, now=NOW)
    # signed by another key, checked against ours
    assert not verify_discord(
        discord_headers(BODY, key=SigningKey.generate(), timestamp=NOW), BODY, DISCORD_PUBLIC_HEX, now=NOW
    )


def test_discord_timestamp_is_part_of_the_signed_message() -> None:
    headers = discord_headers(BODY, timestamp=NOW) | {"X-Signature-Timestamp": str(NOW + 1)}
    assert not verify_discord(headers, BODY, DISCORD_PUBLIC_HEX, now=NOW)


@pytest.mark.parametrize("skew", [-301, 301])
def test_discord_stale_and_future_timestamps_fail(skew: int) -> None:
    headers = discord_headers(BODY, timestamp=NOW + skew)
    assert not verify_discord(headers, BODY, DISCORD_PUBLIC_HEX, now=NOW)
    assert verify_discord(headers, BODY, DISCORD_PUBLIC_HEX, now=NOW, tolerance_s=None)


@pytest.mark.parametrize(
    "key",
    [
        "",
        "00",
        DISCORD_PUBLIC_HEX[:-1],
        DISCORD_PUBLIC_HEX + "00",
        "zz" * 32,
        DISCORD_KEY.encode().hex() + "00" * 32,
    ],
)
def test_discord_wrong_key_length_or_format_is_a_refusal(key: str) -> None:
    assert verify_discord(discord_headers(BODY, timestamp=NOW), BODY, key, now=NOW) is False


@pytest.mark.parametrize(
    "field,value",
    [
        ("X-Signature-Ed25519", "abc"),
        ("X-Signature-Ed25519", "0" * 127),
        ("X-Signature-Ed25519", "g" * 128),
        ("X-Signature-Ed25519", "0" * 128),
        ("X-Signature-Ed25519", ""),
        ("X-Signature-Timestamp", "now"),
        ("X-Signature-Timestamp", ""),
        ("X-Signature-Timestamp", "1.5"),
    ],
)
def test_discord_malformed_headers_are_a_refusal(field: str, value: str) -> None:
    headers = discord_headers(BODY, timestamp=NOW) | {field: value}
    assert verify_discord(headers, BODY, DISCORD_PUBLIC_HEX, now=NOW) is False


@pytest.mark.parametrize("drop", ["X-Signature-Ed25519", "X-Signature-Timestamp"])
def test_discord_missing_header_fails(drop: str) -> None:
    headers = discord_headers(BODY, timestamp=NOW)
    del headers[drop]
    assert not verify_discord(headers, BODY, DISCORD_PUBLIC_HEX, now=NOW)
