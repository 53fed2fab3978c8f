"""``InboundEmail``: a received RFC 5322 message, parsed with the standard library's ``email``
package, with its authentication verdicts and the sender they vouch for."""

from __future__ import annotations

import email
import email.policy
import hashlib
from dataclasses import dataclass, field
from email.message import EmailMessage, Message
from email.utils import getaddresses, parseaddr

from channels.email.auth import AuthenticationVerdicts, aligned, trusted_verdicts
from channels.email.dkim_check import DnsTxt, dkim_pass_domains
from channels.email.limits import EmailLimits


class EmailRejected(Exception):
    """The message cannot be accepted (unparseable or over a limit). The text is for our logs only:
    the sender gets a fixed generic bounce."""


@dataclass(frozen=True, slots=True)
class Attachment:
    """One attached file, decoded."""

    filename: str | None
    content_type: str
    content: bytes

    @property
    def size(self) -> int:
        """Decoded size in bytes."""
        return len(self.content)


@dataclass(frozen=True, slots=True)
class InboundEmail:
    """What ``on_email(email)`` sees. Every field but ``authentication`` and ``verified_sender`` is
    written by the sender and spoofable: make trust decisions on those two only.

    ``verified_sender`` is the ``From`` address when the trusted verdicts authenticate its domain
    (DMARC pass, or an aligned passing DKIM signature), else None.
    """

    from_address: str | None
    to: tuple[str, ...]
    subject: str | None
    text: str | None
    html: str | None
    message_id: str | None
    in_reply_to: str | None
    references: tuple[str, ...]
    attachments: tuple[Attachment, ...]
    authentication: AuthenticationVerdicts
    verified_sender: str | None
    raw: bytes = field(repr=False)
    envelope_from: str | None = None
    envelope_to: tuple[str, ...] = ()
    auto_submitted: bool = False
    """``Auto-Submitted`` other than ``no`` (RFC 3834): an auto-reply, never answered."""

    @property
    def dedupe_id(self) -> str:
        """The ``Message-ID`` (a resent message carries the same one), else a digest of the bytes."""
        return self.message_id or "sha256:" + hashlib.sha256(self.raw).hexdigest()

    @property
    def conversation(self) -> str:
        """The first message of the conversation: the root of ``References``, else ``In-Reply-To``,
        else this message."""
        return (self.references[0] if self.references else None) or self.in_reply_to or self.dedupe_id


def parse_email(
    raw: bytes, *, authserv_id: str | None, limits: EmailLimits | None = None, dkim: bool = False,
    dns_txt: DnsTxt | None = None, envelope_from: str | None = None, envelope_to: tuple[str, ...] = (),
) -> InboundEmail:
    """Parse ``raw`` and compute its verdicts (``Authentication-Results`` by ``authserv_id`` and,
    with ``dkim=True``, our own DKIM check). Raises ``EmailRejected`` for anything unparseable or
    over ``limits``."""
    limits = limits or EmailLimits()
    if len(raw) > limits.max_message_bytes:
        raise EmailRejected("message over the size limit")
    try:
        message = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        text, html, attachments = _walk(message, limits)
        verdicts = trusted_verdicts(message, authserv_id)
        if dkim:
            verdicts = _with_own_dkim(verdicts, *dkim_pass_domains(raw, dns_txt))
        from_address = _address(message.get("From"))
        domain = from_address.rpartition("@")[2] if from_address and "@" in from_address else None
        return InboundEmail(
            from_address=from_address,
            to=tuple(addr for _, addr in getaddresses([str(v) for v in message.get_all("To") or []]) if addr),
            subject=_header(message, "Subject"),
            text=text, html=html,
            message_id=_msgid(message.get("Message-ID")),
            in_reply_to=_msgid(message.get("In-Reply-To")),
            references=_references(message.get("References")),
            attachments=tuple(attachments),
            authentication=verdicts,
            verified_sender=from_address if aligned(domain, verdicts) else None,
            raw=raw, envelope_from=envelope_from, envelope_to=envelope_to,
            auto_submitted=str(message.get("Auto-Submitted") or "no").strip().lower() != "no",
        )
    except EmailRejected:
        raise
    except Exception as exc:  # the email package raises assorted errors on hostile input
        raise EmailRejected(f"unparseable message: {type(exc).__name__}") from exc


def _walk(message: EmailMessage, limits: EmailLimits) -> tuple[str | None, str | None, list[Attachment]]:
    """The first text/plain and text/html bodies and the attachments, within the limits."""
    text: str | None = None
    html: str | None = None
    attachments: list[Attachment] = []
    decoded = 0
    for index, part in enumerate(message.walk()):
        if index >= limits.max_parts:
            raise EmailRejected("too many MIME parts")
        if part.is_multipart():
            continue
        payload = part.get_payload(decode=True)
        content = payload if isinstance(payload, bytes) else b""
        decoded += len(content)
        if decoded > limits.max_decoded_bytes:
            raise EmailRejected("decoded parts over the size limit")
        if part.is_attachment() or (part.get_filename() and part.get_content_maintype() != "text"):
            attachments.append(Attachment(part.get_filename(), part.get_content_type(), content))
            if len(attachments) > limits.max_attachments:
                raise EmailRejected("too many attachments")
        elif part.get_content_type() == "text/plain" and text is None:
            text = _decode(part, content)
        elif part.get_content_type() == "text/html" and html is None:
            html = _decode(part, content)
    return text, html, attachments


def _decode(part: Message, content: bytes) -> str:
    charset = part.get_content_charset() or "utf-8"
    try:
        return content.decode(charset, errors="replace")
    except LookupError:  # an unknown charset name
        return content.decode("utf-8", errors="replace")


def _header(message: Message, name: str) -> str | None:
    value = message.get(name)
    return str(value) if value is not None else None


def _address(value: object) -> str | None:
    if value is None:
        return None
    _, address = parseaddr(str(value))
    return address.lower() if address and "@" in address else None


def _references(value: object) -> tuple[str, ...]:
    ids = (_msgid(token) for token in str(value or "").split())
    return tuple(token for token in ids if token)


def _msgid(value: object) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text if text and len(text) <= 255 else None


def _with_own_dkim(
    verdicts: AuthenticationVerdicts, signatures: int, domains: tuple[str, ...]
) -> AuthenticationVerdicts:
    """Fold our own DKIM result in: a signature that verifies is a pass whatever the header said;
    signatures that all fail make ``fail`` where the header said nothing."""
    if not signatures:
        return verdicts
    source = "dkimpy" if verdicts.source == "none" else f"{verdicts.source}+dkimpy"
    if not domains:
        dkim = verdicts.dkim if verdicts.dkim != "none" else "fail"
        return AuthenticationVerdicts(dkim, verdicts.spf, verdicts.dmarc, verdicts.dkim_domains, source)
    return AuthenticationVerdicts(
        dkim="pass", spf=verdicts.spf, dmarc=verdicts.dmarc,
        dkim_domains=tuple(dict.fromkeys(verdicts.dkim_domains + domains)), source=source,
    )
