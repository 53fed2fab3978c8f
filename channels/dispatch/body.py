"""Reading a request body with a size cap, without ever buffering more than the cap."""

from __future__ import annotations

from starlette.requests import Request

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
"""1 MiB: far above what Slack, GitHub or Discord send for one event."""


class BodyTooLarge(Exception):
    """The body exceeds the limit (answered 413)."""


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, or ``BodyTooLarge`` as soon as it (or its declared length) passes ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)
