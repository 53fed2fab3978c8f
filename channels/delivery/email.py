"""Email replies over SMTP (smtplib), threaded with ``In-Reply-To`` / ``References``.

SMTP has no way to ask whether an earlier attempt went out, so the ``Message-ID`` is derived from
the reply's key: a retried send carries the same id, and mail stores and clients collapse it.
"""

from __future__ import annotations

import hashlib
import smtplib
from email.message import EmailMessage

from channels.delivery.base import Delivered, DeliveryError, Reply


class EmailDeliverer:
    """Sends through the relay at ``host:port`` as ``sender`` (optionally with STARTTLS and login)."""

    def __init__(
        self, host: str, port: int, sender: str, *, starttls: bool = False, username: str | None = None,
        password: str | None = None, timeout_s: float = 15.0,
    ) -> None:
        self.host, self.port, self.sender = host, port, sender
        self.starttls, self.username, self.password = starttls, username, password
        self.timeout_s = timeout_s

    def deliver(self, reply: Reply) -> Delivered:
        """Send the answer to the verified sender of the original message."""
        address = reply.target.address
        message = EmailMessage()
        message["From"] = self.sender
        message["To"] = address["to"]
        message["Subject"] = address.get("subject") or "Re:"
        message["Message-ID"] = f"<{hashlib.sha256(reply.key.encode()).hexdigest()[:32]}@lunora.reply>"
        if address.get("in_reply_to"):
            message["In-Reply-To"] = address["in_reply_to"]
        if address.get("references"):
            message["References"] = " ".join(address["references"])
        message["Auto-Submitted"] = "auto-replied"  # RFC 3834: other robots must not answer it
        message.set_content(reply.text)
        try:
            with smtplib.SMTP(self.host, self.port, timeout=self.timeout_s) as smtp:
                if self.starttls:
                    smtp.starttls()
                if self.username:
                    smtp.login(self.username, self.password or "")
                smtp.send_message(message)
        except (smtplib.SMTPException, OSError) as exc:
            raise DeliveryError(f"the SMTP relay refused the reply: {type(exc).__name__}") from exc
        return "posted"
