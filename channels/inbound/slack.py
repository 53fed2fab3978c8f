"""Slack Events API requests: the ``url_verification`` challenge and ``event_callback`` envelopes.

https://docs.slack.dev/apis/events-api/ — the envelope's ``team_id`` and the event's ``user`` are set
by Slack; ``event_id`` is the same on every retry (``X-Slack-Retry-Num`` counts them).
"""

from __future__ import annotations

from channels.inbound._payload import json_object
from channels.inbound.event import (
    ChannelIdentity,
    Handshake,
    InboundEvent,
    MalformedPayload,
    ReplyTarget,
    obj,
    str_field,
)
from channels.verify._common import Headers, header, parse_timestamp

RETRY_HEADER = "X-Slack-Retry-Num"


def parse_slack(headers: Headers, body: bytes) -> InboundEvent | Handshake | None:
    """The event of a verified Slack request; a ``Handshake`` for the URL challenge; None for what
    starts nothing (a bot's own message — our replies come back as events — or another envelope)."""
    payload = json_object(body)
    kind = payload.get("type")
    if kind == "url_verification":
        challenge = payload.get("challenge")
        if not isinstance(challenge, str):
            raise MalformedPayload("url_verification without a challenge")
        return Handshake.json({"challenge": challenge})
    if kind != "event_callback":
        return None
    event = obj(payload.get("event"))
    event_id = str_field(payload.get("event_id"))
    if event_id is None or not event:
        raise MalformedPayload("event_callback without event_id or event")
    if event.get("bot_id") is not None or event.get("subtype") == "bot_message":
        return None
    team = str_field(payload.get("team_id"))
    user = str_field(event.get("user"))
    channel = str_field(event.get("channel"))
    thread_ts = str_field(event.get("thread_ts")) or str_field(event.get("ts"))
    identity = ChannelIdentity("slack", team, user) if team and user else None
    reply = None
    if channel and thread_ts and team:
        reply = ReplyTarget("slack", {"team": team, "channel": channel, "thread_ts": thread_ts})
    text = event.get("text")
    return InboundEvent(
        channel="slack", kind=str(event.get("type") or "event"), payload=payload, identity=identity,
        delivery_id=f"{team or '-'}:{event_id}", text=text if isinstance(text, str) else None, reply=reply,
        thread=f"{channel}:{thread_ts}" if channel and thread_ts else None,
        retry=parse_timestamp(header(headers, RETRY_HEADER)) or 0,
    )
