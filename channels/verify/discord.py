"""Discord interaction signatures: Ed25519 over ``timestamp + body`` (PyNaCl).

https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers
Discord sends deliberately invalid signatures to check that an endpoint refuses them; every
malformed input here is a refusal, never an exception.
"""

from __future__ import annotations

import time

from nacl.exceptions import BadSignatureError, CryptoError
from nacl.signing import VerifyKey

from channels.verify._common import DEFAULT_TOLERANCE_S, Headers, fresh, header, hex_bytes, parse_timestamp

SIGNATURE_HEADER = "X-Signature-Ed25519"
TIMESTAMP_HEADER = "X-Signature-Timestamp"
_KEY_BYTES = 32
_SIGNATURE_BYTES = 64


def verify_discord(
    headers: Headers, body: bytes, public_key_hex: str | None, *, now: float | None = None,
    tolerance_s: float | None = DEFAULT_TOLERANCE_S,
) -> bool:
    """True only when ``X-Signature-Ed25519`` signs ``X-Signature-Timestamp + body`` under the
    application's public key (64 hex digits, from the developer portal).

    ``tolerance_s`` bounds the timestamp's distance from now either way (None: no freshness check);
    interaction ids are deduped as well, so a replay inside the window starts nothing twice.

    Example::

        verify_discord(request.headers, raw_body, settings.secret("DISCORD_PUBLIC_KEY"))
    """
    key = hex_bytes(public_key_hex.strip() if public_key_hex else None, _KEY_BYTES)
    timestamp_text = header(headers, TIMESTAMP_HEADER)
    signature = hex_bytes(header(headers, SIGNATURE_HEADER), _SIGNATURE_BYTES)
    timestamp = parse_timestamp(timestamp_text)
    if key is None or signature is None or timestamp is None or timestamp_text is None:
        return False
    if tolerance_s is not None and not fresh(timestamp, time.time() if now is None else now, tolerance_s):
        return False
    try:
        VerifyKey(key).verify(timestamp_text.encode("ascii") + body, signature)
    except (BadSignatureError, CryptoError, ValueError, TypeError):
        return False
    return True
