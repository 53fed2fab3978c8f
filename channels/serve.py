"""``lunora ingress``: the webhook routes, the raw-mail endpoint, the SMTP listener and the reply
repair loop of the app named by ``LUNORA_APP``, in one process.

Routes: ``GET /healthz``; ``POST /email`` (raw RFC 5322 mail, bearer ``LUNORA_EMAIL_TOKEN``; only when
the token is set and an agent declares ``on_email``); ``POST /<any path>`` the Slack, GitHub and
Discord webhooks of the agents' ``on_inbound`` (the channel is told by the signature headers).
SMTP listens on ``--smtp-port`` when an agent declares ``on_email``. Every few seconds the process
re-dispatches replies a crash left pending (``channels.replies.sweep_replies``).

Example::

    LUNORA_APP=myproject.agents:app lunora ingress --host 0.0.0.0 --port 8080 --smtp-port 2525
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from channels.dispatch import AppRunStarter, channel_endpoint
from channels.email import EmailConfig, EmailRouter, RawEmailEndpoint, start_smtp_server
from channels.replies import sweep_replies
from lunora_jobs.errors import ConfigurationError

log = logging.getLogger("channels.ingress")

REPAIR_INTERVAL_S = 2.0


def build_ingress(app: Any, *, smtp_host: str = "127.0.0.1", smtp_port: int | None = None,
                  repair_interval_s: float = REPAIR_INTERVAL_S) -> Starlette:
    """The ingress ASGI app for ``app`` (a ``Lunora``); its lifespan runs SMTP and the repair loop."""
    settings = app.settings
    starter = AppRunStarter(app)
    webhook_agents = [a for a in app.registry.values() if a.on_inbound]
    mail_agents = [(a.name, a.on_email) for a in app.registry.values() if a.on_email is not None]
    if not webhook_agents and not mail_agents:
        raise ConfigurationError(
            "no agent of the app declares on_inbound or on_email; the ingress has nothing to serve."
        )
    router = EmailRouter(mail_agents, starter, EmailConfig(authserv_id=settings.email_authserv_id))
    routes = [Route("/healthz", _health, methods=["GET"])]
    if mail_agents and settings.email_token:
        raw_mail = RawEmailEndpoint(router, settings.email_token)
        routes.append(Route("/email", raw_mail.handle, methods=["POST"]))
    if webhook_agents:
        endpoint = channel_endpoint(webhook_agents, starter, settings=settings,
                                    max_body_bytes=settings.ingress_max_body_bytes)
        routes.append(Route("/{path:path}", endpoint.handle, methods=["POST"]))

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        server = None
        if mail_agents and smtp_port is not None:
            server = await start_smtp_server(router, smtp_host, smtp_port)
            log.info("lunora ingress: SMTP on %s", server.sockets[0].getsockname())
        repair = asyncio.create_task(_repair_loop(app, repair_interval_s))
        try:
            yield
        finally:
            repair.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await repair
            if server is not None:
                server.close()
                await server.wait_closed()

    return Starlette(routes=routes, lifespan=lifespan)


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def _repair_loop(app: Any, interval_s: float) -> None:
    while True:
        await asyncio.sleep(interval_s)
        try:
            report = await run_in_threadpool(sweep_replies, app.deps)
        except Exception:
            log.exception("lunora ingress: the reply repair pass failed; retrying")
            continue
        if report.dispatched:
            log.info("lunora ingress: re-dispatched replies of runs %s", report.dispatched)


def serve(host: str = "127.0.0.1", port: int = 8080, smtp_port: int | None = None,
          log_level: str = "info", app_path: str | None = None) -> None:
    """Load the app (``LUNORA_APP``) and serve the ingress with uvicorn until interrupted."""
    import uvicorn

    from lunora_jobs.runtime import load_app

    app = load_app(app_path)
    asgi = build_ingress(app, smtp_host=host, smtp_port=smtp_port)
    uvicorn.run(asgi, host=host, port=port, log_level=log_level)
