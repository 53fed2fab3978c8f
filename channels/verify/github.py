"""GitHub webhook signatures: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>``.

https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
"""

from __future__ import annotations

import hashlib
import hmac
import re

from channels.verify._common import Headers, header

SIGNATURE_HEADER = "X-Hub-Signature-256"
_SIGNATURE = re.compile(r"sha256=[0-9a-fA-F]{64}")


def github_signature(body: bytes, secret: str) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body`` under ``secret``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify_github(headers: Headers, body: bytes, secret: str | None) -> bool:
    """True only when ``X-Hub-Signature-256`` is the HMAC-SHA256 of ``body`` under ``secret``.

    Compared in constant time; a missing secret or a missing/malformed header is ``False``.
    GitHub signs no timestamp: replays are stopped by the ``X-GitHub-Delivery`` dedupe key.

    Example::

        verify_github({"X-Hub-Signature-256": sig}, b"Hello, World!", "It's a Secret to Everybody")
    """
    if not secret:
        return False
    signature = header(headers, SIGNATURE_HEADER)
    if signature is None or not _SIGNATURE.fullmatch(signature):
        return False
    expected = github_signature(body, secret)
    return hmac.compare_digest(expected.encode("ascii"), signature.lower().encode("ascii"))
