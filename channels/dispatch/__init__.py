"""``dispatch_agent_channel``: the ASGI app that turns verified webhooks into queued runs."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route

from channels.dispatch.bindings import ChannelBinding, MissingSecretError, channel_bindings, definition_of
from channels.dispatch.body import DEFAULT_MAX_BODY_BYTES
from channels.dispatch.endpoint import ChannelEndpoint, OwnerMap
from channels.dispatch.mapping import MapperResultError, RunRequest
from channels.dispatch.starter import InboundRun, RunStarter, StartResult
from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "ChannelBinding",
    "ChannelEndpoint",
    "InboundRun",
    "MapperResultError",
    "MissingSecretError",
    "RunRequest",
    "RunStarter",
    "StartResult",
    "dispatch_agent_channel",
]


def dispatch_agent_channel(
    agents: Sequence[Any],
    *,
    starter: RunStarter,
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
    """
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) or max_body_bytes < 1:
        raise ConfigurationError(f"max_body_bytes must be a positive int, got {max_body_bytes!r}")
    settings = settings or Settings()
    definitions = [definition_of(agent) for agent in agents]
    bindings = channel_bindings(definitions, settings.secret)
    if not bindings:
        raise ConfigurationError(
            "none of the agents declares on_inbound; give one on_inbound={'channel': ..., "
            "'secret_env': ..., 'map': fn} to serve webhooks."
        )
    endpoint = ChannelEndpoint(bindings, starter, max_body_bytes=max_body_bytes, clock=clock, owner=owner)
    return Starlette(routes=[Route("/{path:path}", endpoint.handle, methods=["POST"])])
