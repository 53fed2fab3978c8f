"""GitHub webhook deliveries: ``ping``, and events on issues and pull requests.

https://docs.github.com/en/webhooks/webhook-events-and-payloads — ``X-GitHub-Delivery`` is the same
on a redelivery; ``installation.id`` (GitHub Apps) or the hook target headers and ``sender.id`` are
set by GitHub.
"""

from __future__ import annotations

from typing import Any

from channels.inbound._payload import form_payload, json_object
from channels.inbound.event import (
    ChannelIdentity,
    Handshake,
    InboundEvent,
    MalformedPayload,
    ReplyTarget,
    obj,
    str_field,
)
from channels.verify._common import Headers, header

EVENT_HEADER = "X-GitHub-Event"
DELIVERY_HEADER = "X-GitHub-Delivery"
TARGET_TYPE_HEADER = "X-GitHub-Hook-Installation-Target-Type"
TARGET_ID_HEADER = "X-GitHub-Hook-Installation-Target-ID"
REPLY_MARKER = "<!-- lunora-reply:"
"""Hidden marker in every comment the ingress posts: it dedupes a re-delivered reply and keeps our
own comments (which GitHub sends back as ``issue_comment`` events) from starting runs."""


def parse_github(headers: Headers, body: bytes) -> InboundEvent | Handshake | None:
    """The event of a verified GitHub delivery; a ``Handshake`` for ``ping``; None for our own
    comments and bots (loop guard)."""
    event_name = header(headers, EVENT_HEADER)
    delivery = header(headers, DELIVERY_HEADER)
    if not event_name or not delivery or len(delivery) > 128:
        raise MalformedPayload("missing X-GitHub-Event or X-GitHub-Delivery")
    payload = form_payload(body) if body.startswith(b"payload=") else json_object(body)
    if event_name == "ping":
        return Handshake.json({"ok": True})
    sender = obj(payload.get("sender"))
    comment = obj(payload.get("comment"))
    comment_body = comment.get("body")
    if sender.get("type") == "Bot" or (isinstance(comment_body, str) and REPLY_MARKER in comment_body):
        return None
    identity = _identity(headers, payload, sender)
    repo = str_field(obj(payload.get("repository")).get("full_name"))
    issue = obj(payload.get("issue")) or obj(payload.get("pull_request"))
    number = issue.get("number")
    reply = None
    thread = None
    if repo and isinstance(number, int) and not isinstance(number, bool):
        reply = ReplyTarget("github", {"repo": repo, "number": number})
        thread = f"{repo}#{number}"
    text = comment_body if isinstance(comment_body, str) else issue.get("body")
    return InboundEvent(
        channel="github", kind=event_name, payload=payload, identity=identity, delivery_id=delivery,
        text=text if isinstance(text, str) else None, reply=reply, thread=thread,
    )


def _identity(headers: Headers, payload: dict[str, Any], sender: dict[str, Any]) -> ChannelIdentity | None:
    user = str_field(sender.get("id"))
    tenant = str_field(obj(payload.get("installation")).get("id"))
    if tenant is None:
        target_type = header(headers, TARGET_TYPE_HEADER)
        target_id = header(headers, TARGET_ID_HEADER)
        if target_type and target_id and len(target_type) + len(target_id) < 200:
            tenant = f"{target_type}:{target_id}"
    return ChannelIdentity("github", tenant, user) if tenant and user else None
