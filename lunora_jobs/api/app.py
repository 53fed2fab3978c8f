"""``create_app``: the FastAPI application in front of a ``Lunora`` app.

Example::

    from lunora_jobs.api import BearerTokenAuthenticator, create_app
    api = create_app(app, BearerTokenAuthenticator({"s3cret": "user-7"}))
    # uvicorn.run(api, host="127.0.0.1", port=8000)   — or `lunora api`, which reads the settings
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from lunora_jobs.api.auth.base import Authenticator
from lunora_jobs.api.context import ApiContext
from lunora_jobs.api.live.hub import LiveHub, LocalHub, RedisHub
from lunora_jobs.api.problems import install_problem_handlers, problem_responses, publish_problem_media_type
from lunora_jobs.api.routes import console, governance, pricing, proposals, runs, session, stream, threads
from lunora_jobs.api.security import CSRF_HEADER, Gatekeeper
from lunora_jobs.engine.events import RedisEventBus
from lunora_jobs.runtime import Lunora

API_TITLE = "Lunora Jobs API"
POLL_S = 30.0
"""A quiet stream re-reads its thread this often anyway. Every message, status and state change is
announced (``engine.notices``, ``engine.events``), so this only bounds the delay of a notice lost on
the way (a Redis hiccup on the publishing side)."""


def default_hub(lunora: Lunora) -> LiveHub:
    """Redis pub/sub when the app publishes there (workers in other processes), else in-process."""
    bus = lunora.events
    if isinstance(bus, RedisEventBus):
        return RedisHub(bus.client, prefix=bus.prefix)
    return LocalHub(bus)


def publish_agent_names(schema: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """Say in the schema which agents this API can start (an ``enum`` on every ``agent`` field)."""
    for body in ("RunStart", "ThreadRunStart"):
        properties = schema.get("components", {}).get("schemas", {}).get(body, {}).get("properties", {})
        field = properties.get("agent")
        if field is not None and names:
            field["enum"] = sorted(names)
    return schema


def create_app(
    lunora: Lunora, authenticator: Authenticator, *, cors_origins: Sequence[str] = (),
    heartbeat_s: float = 15.0, poll_s: float | None = None, hub: LiveHub | None = None,
) -> FastAPI:
    """The API app. Every route but ``/healthz``, ``/openapi.json`` and the console's static files needs
    a credential the ``authenticator`` verifies. ``cors_origins``: browser origins allowed to call it
    (none by default: CORS closed). ``heartbeat_s``: idle time before a stream sends a ping.
    ``poll_s``: how often a quiet stream re-reads its thread anyway (default ``POLL_S``)."""
    origins = [o.strip().rstrip("/") for o in cors_origins if o.strip()]
    live = hub or default_hub(lunora)
    ctx = ApiContext(lunora=lunora, gate=Gatekeeper(authenticator, origins), hub=live,
                     heartbeat_s=heartbeat_s, poll_s=poll_s or POLL_S)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await live.start()
        try:
            yield
        finally:
            await live.stop()

    api = FastAPI(title=API_TITLE, version="1", lifespan=lifespan,
                  description="Start and watch durable agent runs; answer their approvals.",
                  # Any route can meet a malformed request, a missing credential or a CSRF refusal.
                  responses=problem_responses(400, 401, 403, 422))
    install_problem_handlers(api)
    if origins:
        api.add_middleware(
            CORSMiddleware, allow_origins=origins, allow_credentials=False,
            allow_methods=["GET", "POST", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID", "Idempotency-Key", CSRF_HEADER],
        )
    for module in (runs, threads, proposals, governance, pricing, stream, session, console):
        api.include_router(module.router(ctx))
    api.state.lunora_context = ctx

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            schema = get_openapi(title=api.title, version=api.version, description=api.description,
                                 routes=api.routes)
            api.openapi_schema = publish_agent_names(publish_problem_media_type(schema),
                                                     [a.name for a in lunora.agents])
        return api.openapi_schema

    api.openapi = openapi  # type: ignore[method-assign]
    return api
