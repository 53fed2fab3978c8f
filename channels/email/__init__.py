"""Inbound email: parsing (``email`` package), authentication verdicts from the trusted
``Authentication-Results`` (and optionally dkimpy), routing to ``on_email`` mappers, the SMTP
listener (aiosmtpd) and the raw-mail HTTP endpoint."""

from channels.email.auth import AuthenticationVerdicts, trusted_verdicts
from channels.email.http import RawEmailEndpoint
from channels.email.limits import EmailLimits
from channels.email.message import Attachment, EmailRejected, InboundEmail, parse_email
from channels.email.router import EmailConfig, EmailOutcome, EmailRouter
from channels.email.smtp import EmailHandler, start_smtp_server

__all__ = [
    "Attachment",
    "AuthenticationVerdicts",
    "EmailConfig",
    "EmailHandler",
    "EmailLimits",
    "EmailOutcome",
    "EmailRejected",
    "EmailRouter",
    "InboundEmail",
    "RawEmailEndpoint",
    "parse_email",
    "start_smtp_server",
    "trusted_verdicts",
]
