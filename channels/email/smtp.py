"""The SMTP listener (aiosmtpd): each message's DATA is handed to the ``EmailRouter``.

Meant to sit behind your border MTA, which checks DKIM/SPF/DMARC and prepends its
``Authentication-Results`` (the ``authserv_id`` the router trusts). Answers ``250`` for a claimed
or dropped message and a fixed ``554`` bounce for one that cannot be parsed or started; an oversize
message gets aiosmtpd's ``552`` from the ``data_size_limit``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session
from starlette.concurrency import run_in_threadpool

from channels.email.message import EmailRejected
from channels.email.router import EmailRouter

log = logging.getLogger("channels.email")

ACCEPTED = "250 2.0.0 OK"
BOUNCE = "554 5.6.0 Message not accepted"


class EmailHandler:
    """aiosmtpd handler: ``handle_DATA`` parses and routes in a worker thread (it may block on the
    database, the broker and DNS)."""

    def __init__(self, router: EmailRouter) -> None:
        self.router = router

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Route one message; the answer is the SMTP reply line."""
        raw = envelope.original_content or b""
        if isinstance(raw, str):  # pragma: no cover - only with decode_data=True, which we never set
            raw = raw.encode("utf-8", "surrogateescape")
        try:
            outcome = await run_in_threadpool(
                self.router.receive, raw, envelope_from=envelope.mail_from,
                envelope_to=tuple(envelope.rcpt_tos),
            )
        except EmailRejected as exc:
            log.warning("lunora email: bounced a message from %s: %s", envelope.mail_from, exc)
            return BOUNCE
        except Exception:
            log.exception("lunora email: failed on a message from %s", envelope.mail_from)
            return BOUNCE
        log.info("lunora email: message from %s %s (%s)", envelope.mail_from, outcome.status, outcome.run_id)
        return ACCEPTED


async def start_smtp_server(
    router: EmailRouter, host: str, port: int, *, hostname: str | None = None,
) -> asyncio.Server:
    """Serve SMTP on ``host:port`` in the running event loop (port 0 picks a free one; read it from
    ``server.sockets[0].getsockname()``). The message size limit is the router's."""
    handler = EmailHandler(router)
    limit = router.config.limits.max_message_bytes

    def factory() -> SMTP:
        return SMTP(handler, data_size_limit=limit, hostname=hostname, ident="lunora ingress")

    loop = asyncio.get_running_loop()
    server: Any = await loop.create_server(factory, host=host, port=port)
    return server  # type: ignore[no-any-return]
