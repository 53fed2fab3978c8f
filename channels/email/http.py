"""The HTTP endpoint for providers that POST raw RFC 5322 mail.

The caller authenticates with ``Authorization: Bearer <token>`` (the ingress's configured email
token): the verdicts inside a message are only as trustworthy as whoever hands it to us. Answers:
200 claimed, 204 dropped, 400 rejected (unparseable, over a limit, or not startable — a fixed body),
401 bad token, 413 over the size limit.
"""

from __future__ import annotations

import hmac
import logging

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from channels.dispatch.body import BodyTooLarge, read_body
from channels.dispatch.responses import accepted, declined, refusal
from channels.email.message import EmailRejected
from channels.email.router import EmailRouter

log = logging.getLogger("channels.email")
_BEARER = "bearer "


class RawEmailEndpoint:
    """``POST`` a raw message (any content type) with the bearer token."""

    def __init__(self, router: EmailRouter, token: str) -> None:
        if not token:
            raise ValueError("the raw-mail endpoint needs a token")
        self.router = router
        self._token = token.encode("utf-8")

    async def handle(self, request: Request) -> Response:
        """Handle one posted message."""
        if not self._authorized(request.headers.get("authorization")):
            return refusal(401)
        try:
            raw = await read_body(request, self.router.config.limits.max_message_bytes)
        except BodyTooLarge:
            return refusal(413)
        try:
            outcome = await run_in_threadpool(self.router.receive, raw)
        except EmailRejected as exc:
            log.warning("lunora email: rejected a posted message: %s", exc)
            return refusal(400)
        return accepted() if outcome.status != "dropped" else declined()

    def _authorized(self, value: str | None) -> bool:
        if not value or not value.lower().startswith(_BEARER):
            return False
        return hmac.compare_digest(value[len(_BEARER):].strip().encode("utf-8"), self._token)
