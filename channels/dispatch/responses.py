"""The fixed answers of the ingress. A refusal says nothing about why: no hint for a forger."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse, Response

from channels.inbound.event import Handshake


def refusal(status: int) -> Response:
    """A fixed plain-text answer for ``status`` (401, 400, 409, 413, 500, 503, ...)."""
    return Response(_TEXT.get(status, "error"), status_code=status, media_type="text/plain")


def handshake(answer: Handshake) -> Response:
    """The protocol answer a ``Handshake`` asks for."""
    return Response(answer.body, status_code=answer.status, media_type=answer.media_type)


def accepted(body: Mapping[str, object] | None = None) -> Response:
    """200: the event was claimed (with the Discord deferred-response body when given)."""
    return JSONResponse(dict(body) if body is not None else {"ok": True})


def declined() -> Response:
    """204: verified, but no agent took it."""
    return Response(status_code=204)


_TEXT = {
    400: "bad request",
    401: "unauthorized",
    404: "not found",
    405: "method not allowed",
    409: "conflict",
    413: "payload too large",
    429: "too many requests",
    500: "internal error",
    503: "unavailable",
}
