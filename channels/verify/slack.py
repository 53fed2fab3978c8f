"""Slack request signatures (v0): HMAC-SHA256 over ``v0:<timestamp>:<raw body>``.

https://docs.slack.dev/authentication/verifying-requests-from-slack/ — the computation and the
constant-time compare are slack-sdk's ``SignatureVerifier``; this wrapper adds what it leaves to the
caller: strict header formats (its ``int(timestamp)`` raises on ``"abc"``, its compare raises on a
non-ASCII signature) and a clock we can pin in tests.
"""

from __future__ import annotations

import re
import time

from slack_sdk.signature import Clock, SignatureVerifier

from channels.verify._common import DEFAULT_TOLERANCE_S, Headers, fresh, header, parse_timestamp

SIGNATURE_HEADER = "X-Slack-Signature"
TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


class _FixedClock(Clock):
    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


def verify_slack(
    headers: Headers, body: bytes, signing_secret: str | None, *, now: float | None = None,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
) -> bool:
    """True only for a request Slack signed with ``signing_secret`` within ``tolerance_s`` of now.

    A missing secret, missing or malformed headers, a stale or future timestamp, a body that is not
    UTF-8 or a wrong signature is ``False`` — never an exception.

    Example::

        if not verify_slack(request.headers, raw_body, settings.secret("SLACK_SIGNING_SECRET")):
            return Response(status_code=401)
    """
    if not signing_secret or not signing_secret.strip():
        return False
    timestamp_text = header(headers, TIMESTAMP_HEADER)
    signature = header(headers, SIGNATURE_HEADER)
    timestamp = parse_timestamp(timestamp_text)
    if timestamp is None or timestamp_text is None or signature is None:
        return False
    if not _SIGNATURE.fullmatch(signature):
        return False
    current = time.time() if now is None else now
    if not fresh(timestamp, current, tolerance_s):
        return False
    try:
        body.decode("utf-8")  # slack-sdk signs the decoded text; Slack only ever sends UTF-8
    except UnicodeDecodeError:
        return False
    # The freshness window above is ours (configurable); the verifier re-checks its own 5 minutes
    # against the same clock, so a tolerance above 300 s is capped by slack-sdk.
    verifier = SignatureVerifier(signing_secret, clock=_FixedClock(current))
    return verifier.is_valid(body=body, timestamp=timestamp_text, signature=signature)
