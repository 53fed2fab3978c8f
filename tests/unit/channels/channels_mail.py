"""Building test messages with the standard library, optionally DKIM-signed (dkimpy, Ed25519)."""

from __future__ import annotations

import base64
from email.message import EmailMessage
from email.utils import make_msgid

import dkim
from nacl.signing import SigningKey

TRUSTED = "mx.lunora.test"
DKIM_KEY = SigningKey(bytes(range(1, 33)))
DKIM_SELECTOR = b"sel"


def message(
    *,
    sender: str = "Alice <alice@example.org>",
    subject: str = "Help with my order",
    text: str = "It broke.",
    auth: list[str] | None = None,
    attachments: int = 0,
    attachment_size: int = 10,
    message_id: str | None = None,
) -> bytes:
    """A message; ``auth`` values become ``Authentication-Results`` headers, topmost first."""
    msg = EmailMessage()
    for value in auth or []:
        msg["Authentication-Results"] = value
    msg["From"] = sender
    msg["To"] = "support@ours.test"
    msg["Subject"] = subject
    msg["Message-ID"] = message_id or make_msgid(domain="example.org")
    msg.set_content(text)
    for i in range(attachments):
        msg.add_attachment(
            bytes(attachment_size), maintype="application", subtype="octet-stream", filename=f"f{i}.bin"
        )
    return msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))


def passing(authserv_id: str = TRUSTED, domain: str = "example.org") -> str:
    """An ``Authentication-Results`` value where everything passed for ``domain``."""
    return (
        f"{authserv_id}; dkim=pass header.d={domain} header.s=sel; "
        f"spf=pass smtp.mailfrom=alice@{domain}; dmarc=pass header.from={domain}"
    )


def dkim_sign(raw: bytes, domain: bytes = b"example.org") -> bytes:
    """``raw`` with a DKIM-Signature by ``DKIM_KEY`` for ``domain``."""
    signature = dkim.sign(
        raw,
        DKIM_SELECTOR,
        domain,
        base64.b64encode(bytes(DKIM_KEY)),
        signature_algorithm=b"ed25519-sha256",
        include_headers=[b"from", b"to", b"subject", b"message-id"],
    )
    return signature + raw


def dns_txt(name: bytes, timeout: int = 5) -> bytes | None:
    """The DNS answer for our test selector (what a resolver would return)."""
    if name == b"sel._domainkey.example.org.":
        return b"v=DKIM1; k=ed25519; p=" + base64.b64encode(DKIM_KEY.verify_key.encode())
    return None
