"""The live thread stream: ``GET /threads/{key}/events`` (Server-Sent Events) and its WebSocket twin
``/threads/{key}/ws``. Both serve ``live.feed.ThreadFeed``: resume with ``Last-Event-ID`` (the last
message ``seq`` received; header, or ``last_event_id`` in the query for clients that cannot set
headers), heartbeats during silence."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Annotated

from anyio import to_thread
from fastapi import APIRouter, Depends, Header, Path, Query, Request, WebSocket, WebSocketDisconnect
from fastapi.sse import EventSourceResponse, ServerSentEvent

from lunora_jobs.api.access import visible_thread
from lunora_jobs.api.auth.base import AuthenticationError, Identity
from lunora_jobs.api.context import ApiContext
from lunora_jobs.api.live.feed import FeedEvent, ThreadFeed
from lunora_jobs.api.problems import problem_responses
from lunora_jobs.api.schemas import MAX_SEQ, Key
from lunora_jobs.api.security import credential_of, same_origin
from lunora_jobs.errors import NotFoundError

log = logging.getLogger(__name__)

ThreadKey = Annotated[Key, Path(description="The thread's key.")]
RETRY_MS = 1000
WS_UNAUTHENTICATED = 4401
WS_FORBIDDEN = 4403
WS_NOT_FOUND = 4404


def _resume_point(header: str | None, query: int | None) -> int:
    if header is not None and header.strip().isdigit():
        return min(int(header.strip()), MAX_SEQ)
    return query or 0


def router(ctx: ApiContext) -> APIRouter:
    """The stream routes."""
    api = APIRouter(tags=["stream"])
    identity = Depends(ctx.gate)

    def feed(thread_key: str, who: Identity, after: int) -> ThreadFeed:
        thread = visible_thread(ctx.store, thread_key, who)
        return ThreadFeed(ctx.lunora, ctx.hub, thread, after_seq=after, viewer=who.subject, trusted=who.admin,
                          heartbeat_s=ctx.heartbeat_s, poll_s=ctx.poll_s)

    def open_feed(
        key: ThreadKey,
        last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", max_length=32)] = None,
        after: Annotated[int | None, Query(alias="last_event_id", ge=0, le=MAX_SEQ,
                                           description="Resume point when the header cannot be set.")] = None,
        who: Identity = identity,
    ) -> ThreadFeed:
        # A dependency, so the owner gate answers 404 before the stream's 200 is sent.
        return feed(key, who, _resume_point(last_event_id, after))

    @api.get("/threads/{key}/events", response_class=EventSourceResponse,
             responses=problem_responses(404))
    async def thread_events(
        request: Request, stream: ThreadFeed = Depends(open_feed),
    ) -> AsyncIterator[ServerSentEvent]:
        """The thread's live stream (text/event-stream): messages (``id`` = seq), ``status``,
        ``approvals``, ``state``, ``delta`` (streamed model text), ``snapshot`` on connect, ``ping``."""
        yield ServerSentEvent(retry=RETRY_MS, comment="lunora thread stream")
        async for event in stream.events():
            if await request.is_disconnected():
                return
            yield _sse(event)

    @api.websocket("/threads/{key}/ws")
    async def thread_socket(websocket: WebSocket, key: str) -> None:
        """The same feed as JSON frames ``{"event", "id", "data"}``; resume with ``?last_event_id=``."""
        await websocket.accept()
        try:
            who = await _ws_identity(ctx, websocket)
            query = websocket.query_params.get("last_event_id")
            after = _resume_point(websocket.headers.get("last-event-id") or query, None)
            stream = await to_thread.run_sync(lambda: feed(key, who, after))
        except AuthenticationError as exc:
            await websocket.close(WS_UNAUTHENTICATED, str(exc)[:120])
            return
        except _Forbidden as exc:
            await websocket.close(WS_FORBIDDEN, str(exc)[:120])
            return
        except NotFoundError as exc:
            await websocket.close(WS_NOT_FOUND, str(exc)[:120])
            return
        try:
            async for event in stream.events():
                frame = {"event": event.event, "id": event.id, "data": event.data}
                await websocket.send_text(json.dumps(frame))
        except (WebSocketDisconnect, RuntimeError):
            return  # the client went away

    return api


class _Forbidden(Exception):
    pass


async def _ws_identity(ctx: ApiContext, websocket: WebSocket) -> Identity:
    credential = credential_of(websocket)
    if credential is None:
        raise AuthenticationError("no credential: send 'Authorization: Bearer <token>' or sign in.")
    if credential.via_cookie and not same_origin(websocket, ctx.gate.allowed_origins):
        # A page on another origin must not ride the console's cookie (cross-site WebSocket hijacking).
        raise _Forbidden("cross-origin WebSocket refused")
    return await to_thread.run_sync(lambda: ctx.gate.verify(credential))


def _sse(event: FeedEvent) -> ServerSentEvent:
    if event.event == "ping":
        return ServerSentEvent(comment="ping")
    return ServerSentEvent(event=event.event, data=event.data,
                           id=str(event.id) if event.id is not None else None)
