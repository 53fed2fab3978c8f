"""The webhook endpoint: bounded read → channel detection → signature check → parse → map → start.

Nothing user-defined runs before the signature is verified over the raw body; every refusal is a
fixed answer. The mapper and the start run in the thread pool (they may block on I/O), and the
start only enqueues: the request never runs the agent.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from channels.dispatch.bindings import ChannelBinding
from channels.dispatch.body import BodyTooLarge, read_body
from channels.dispatch.detect import PARSERS, detect_channel, verifier
from channels.dispatch.mapping import run_request
from channels.dispatch.responses import accepted, declined, handshake, refusal
from channels.dispatch.starter import InboundRun, RunStarter
from channels.inbound import ChannelIdentity, Handshake, InboundEvent, MalformedPayload
from channels.inbound.discord import DEFERRED
from lunora_jobs.errors import ConflictError, QuotaExceededError

log = logging.getLogger("channels.ingress")

OwnerMap = Callable[[ChannelIdentity], str]


class ChannelEndpoint:
    """Serves one POST: see the module docstring. Status codes: 200 claimed (Discord: a deferred
    response) or a handshake answer; 204 declined; 400 verified but malformed; 401 unverified;
    409 the thread refused the run; 413 body over the limit; 500 a mapper raised; 503 the start
    failed (the platform retries, and the dedupe key makes that safe)."""

    def __init__(
        self, bindings: Sequence[ChannelBinding], starter: RunStarter, *, max_body_bytes: int,
        clock: Callable[[], float], owner: OwnerMap | None = None,
    ) -> None:
        self.bindings = list(bindings)
        self.starter = starter
        self.max_body_bytes = max_body_bytes
        self.clock = clock
        self.owner = owner

    async def handle(self, request: Request) -> Response:
        """Handle one webhook request."""
        try:
            body = await read_body(request, self.max_body_bytes)
        except BodyTooLarge:
            return refusal(413)
        channel = detect_channel(request.headers)
        if channel is None:
            return refusal(401)
        verify = verifier(channel, now=self.clock)
        verified = [b for b in self.bindings
                    if b.options.channel == channel and verify(request.headers, body, b.secret)]
        if not verified:
            return refusal(401)
        try:
            parsed = PARSERS[channel](request.headers, body)
        except MalformedPayload:
            return refusal(400)
        if isinstance(parsed, Handshake):
            return handshake(parsed)
        if parsed is None or parsed.identity is None:
            return declined()
        for binding in verified:
            response = await self._offer(binding, parsed)
            if response is not None:
                return response
        return declined()

    async def _offer(self, binding: ChannelBinding, event: InboundEvent) -> Response | None:
        """Offer ``event`` to one agent: None when it declines, else the answer to send."""
        assert event.identity is not None
        try:
            owner = (binding.options.owner or self.owner or ChannelIdentity.default_owner)(event.identity)
            mapper = binding.options.map
            if inspect.iscoroutinefunction(mapper):
                mapped = await mapper(event)
            else:
                mapped = await run_in_threadpool(mapper, event)
            request = run_request(mapped, owner_allowed=False)
        except Exception:
            log.exception("lunora ingress: the on_inbound mapper of agent %r failed", binding.agent)
            return refusal(500)
        if request is None:
            return None
        if not isinstance(owner, str) or not owner.strip():
            log.warning("lunora ingress: no owner for a %s event of agent %r; declined", event.channel,
                        binding.agent)
            return None
        run = InboundRun(
            agent=binding.agent, dedupe_key=event.dedupe_key, input=request.input, owner=owner,
            thread_key=request.thread_key or event.default_thread_key(), title=request.title,
            reply=event.reply if binding.options.reply else None,
            tenant=f"{event.identity.channel}:{event.identity.tenant}",
        )
        try:
            result = await run_in_threadpool(self.starter.start, run)
        except ConflictError:
            return refusal(409)
        except QuotaExceededError as exc:  # the claim was released: a redelivery once under quota starts it
            log.warning("lunora ingress: a run of agent %r was refused: %s", binding.agent, exc)
            return refusal(429)
        except Exception:
            log.exception("lunora ingress: starting a run of agent %r failed", binding.agent)
            return refusal(503)
        log.info("lunora ingress: %s %s -> run %s (%s)", event.channel, event.dedupe_key, result.run_id,
                 result.status)
        return accepted(DEFERRED if event.channel == "discord" else None)
