"""Offering a received message to the agents' ``on_email`` mappers, in declaration order.

The first mapper that returns a run input claims the message; an unclaimed message is dropped; a
message that cannot be parsed, or whose claim cannot be started, is rejected (the SMTP server and
the HTTP endpoint turn that into a generic bounce, never reflecting the cause to the sender).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from channels.dispatch.mapping import run_request
from channels.dispatch.starter import InboundRun, RunStarter
from channels.email.dkim_check import DnsTxt
from channels.email.limits import EmailLimits
from channels.email.message import EmailRejected, InboundEmail, parse_email
from channels.inbound.event import ReplyTarget

log = logging.getLogger("channels.email")


@dataclass(frozen=True, slots=True)
class EmailConfig:
    """``authserv_id``: the one ``Authentication-Results`` issuer trusted (your border MTA);
    ``dkim``: also verify DKIM signatures ourselves (dkimpy; DNS via ``dns_txt`` when given)."""

    authserv_id: str | None = None
    limits: EmailLimits = field(default_factory=EmailLimits)
    dkim: bool = False
    dns_txt: DnsTxt | None = None


@dataclass(frozen=True, slots=True)
class EmailOutcome:
    """``claimed`` (a run started), ``duplicate`` (this message already started one) or ``dropped``."""

    status: Literal["claimed", "duplicate", "dropped"]
    agent: str | None = None
    run_id: str | None = None


class EmailRouter:
    """Parses messages and starts the run of the first agent whose ``on_email`` claims it.

    Example::

        router = EmailRouter([("support", support.on_email)], starter, EmailConfig("mx.example.com"))
        router.receive(raw_bytes)          # EmailOutcome(status="claimed", agent="support", ...)
    """

    def __init__(
        self, mappers: Sequence[tuple[str, Callable[[InboundEmail], Any]]], starter: RunStarter,
        config: EmailConfig,
    ) -> None:
        self.mappers = list(mappers)
        self.starter = starter
        self.config = config

    def receive(
        self, raw: bytes, *, envelope_from: str | None = None, envelope_to: Sequence[str] = ()
    ) -> EmailOutcome:
        """Parse ``raw`` and offer it; ``EmailRejected`` when it cannot be parsed or started."""
        message = parse_email(
            raw, authserv_id=self.config.authserv_id, limits=self.config.limits, dkim=self.config.dkim,
            dns_txt=self.config.dns_txt, envelope_from=envelope_from, envelope_to=tuple(envelope_to),
        )
        if message.auto_submitted:  # an auto-reply (maybe to our own reply): answering it could loop
            return EmailOutcome("dropped")
        for agent, mapper in self.mappers:
            try:
                request = run_request(mapper(message), owner_allowed=True)
            except Exception as exc:
                log.exception("lunora email: the on_email mapper of agent %r failed", agent)
                raise EmailRejected("mapper failed") from exc
            if request is None:
                continue
            owner = request.owner or (f"email:{message.verified_sender}" if message.verified_sender else None)
            if owner is None:
                log.warning("lunora email: agent %r claimed a message with no verified sender and no "
                            "owner; dropped (return 'owner' from on_email, derived from "
                            "email.authentication)", agent)
                return EmailOutcome("dropped", agent)
            run = InboundRun(
                agent=agent, dedupe_key=f"email:{owner}:{message.dedupe_id}", input=request.input,
                owner=owner, thread_key=request.thread_key or f"email:{message.conversation}:{owner}",
                title=request.title if request.title is not None else message.subject,
                reply=reply_target(message),
            )
            try:
                result = self.starter.start(run)
            except Exception as exc:
                log.exception("lunora email: starting a run of agent %r failed", agent)
                raise EmailRejected("dispatch failed") from exc
            status: Literal["claimed", "duplicate"] = "claimed" if result.status == "started" else "duplicate"
            return EmailOutcome(status, agent, result.run_id)
        return EmailOutcome("dropped")


def reply_target(message: InboundEmail) -> ReplyTarget | None:
    """Where a reply goes: the verified sender only (answering a spoofed address is backscatter)."""
    if message.verified_sender is None:
        return None
    subject = message.subject or ""
    if not subject.lower().startswith("re:"):
        subject = f"Re: {subject}".strip()
    references = [*message.references, *([message.message_id] if message.message_id else [])]
    return ReplyTarget("email", {
        "to": message.verified_sender, "subject": subject, "in_reply_to": message.message_id,
        "references": references[-20:],
    })
