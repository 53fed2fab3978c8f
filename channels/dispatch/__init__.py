"""``dispatch_agent_channel``: the ASGI app that turns verified webhooks into queued runs."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route

from channels.dispatch.app_starter import AppRunStarter
from channels.dispatch.bindings import ChannelBinding, MissingSecretError, channel_bindings, definition_of
from channels.dispatch.body import DEFAULT_MAX_BODY_BYTES
from channels.dispatch.endpoint import ChannelEndpoint, OwnerMap
from channels.dispatch.mapping import MapperResultError, RunRequest
from channels.dispatch.starter import InboundRun, RunStarter, StartResult
from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "AppRunStarter",
    "ChannelBinding",
    "ChannelEndpoint",
    "InboundRun",
    "MapperResultError",
    "MissingSecretError",
    "RunRequest",
    "RunStarter",
    "StartResult",
    "channel_endpoint",
    "dispatch_agent_channel",
]


def dispatch_agent_channel(
    agents: Sequence[Any],
    *,
    app: Any = None,
    starter: RunStarter | None = None,
    settings: Settings | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    owner: OwnerMap | None = None,
    clock: Callable[[], float] = time.time,
) -> Starlette:
    """An ASGI app serving webhooks for the ``on_inbound`` of ``agents`` on any POST path.

    The channel is detected from the signature headers, the request verified over the raw body
    with the agent's secret (``secret_env`` read through ``settings``) before any mapper runs, and
    answered 200 (claimed / PONG / challenge), 204 (declined), 401 (bad, missing or stale
    signature — a fixed body), 413 (body over ``max_body_bytes``). ``owner`` replaces the default
    owner mapping (``<channel>:<tenant>:<user>`` of the verified identity) for every agent without
    its own ``on_inbound["owner"]``.

    Runs are started by ``starter``, by default ``AppRunStarter(app)``: deduped in the app's inbound
    ledger and handed to its dispatcher (the Celery broker), never run in the request.
    """
    if starter is None:
        if app is None:
            raise ConfigurationError(
                "dispatch_agent_channel needs the app its runs start in: pass app=<your Lunora app> "
                "(or starter=<a RunStarter>)."
            )
        starter = AppRunStarter(app)
    settings = settings or (app.settings if app is not None else Settings())
    endpoint = channel_endpoint(agents, starter, settings=settings, max_body_bytes=max_body_bytes,
                                owner=owner, clock=clock)
    return Starlette(routes=[Route("/{path:path}", endpoint.handle, methods=["POST"])])


def channel_endpoint(
    agents: Sequence[Any], starter: RunStarter, *, settings: Settings,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, owner: OwnerMap | None = None,
    clock: Callable[[], float] = time.time,
) -> ChannelEndpoint:
    """The webhook endpoint of ``agents`` (what ``dispatch_agent_channel`` and ``lunora ingress``
    route POSTs to); secrets are read through ``settings`` now."""
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) or max_body_bytes < 1:
        raise ConfigurationError(f"max_body_bytes must be a positive int, got {max_body_bytes!r}")
    definitions = [definition_of(agent) for agent in agents]
    bindings = channel_bindings(definitions, settings.secret)
    if not bindings:
        raise ConfigurationError(
            "none of the agents declares on_inbound; give one on_inbound={'channel': ..., "
            "'secret_env': ..., 'map': fn} to serve webhooks."
        )
    return ChannelEndpoint(bindings, starter, max_body_bytes=max_body_bytes, clock=clock, owner=owner)
