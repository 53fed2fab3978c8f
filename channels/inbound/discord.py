"""Discord interactions: PING, and commands / components / modals from users.

https://discord.com/developers/docs/interactions/receiving-and-responding — the interaction ``id``,
``guild_id`` and ``member.user.id`` (``user.id`` in DMs) are set by Discord; ``token`` addresses the
follow-up webhook for 15 minutes.
"""

from __future__ import annotations

from typing import Any

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
from channels.verify._common import Headers

PING, APPLICATION_COMMAND, MESSAGE_COMPONENT, AUTOCOMPLETE, MODAL_SUBMIT = 1, 2, 3, 4, 5
KINDS = {APPLICATION_COMMAND: "application_command", MESSAGE_COMPONENT: "message_component",
         MODAL_SUBMIT: "modal_submit"}
PONG = {"type": 1}
DEFERRED = {"type": 5}
"""DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE: "thinking…" now, the answer as a follow-up from the worker."""
_NO_CHOICES = {"type": 8, "data": {"choices": []}}


def parse_discord(headers: Headers, body: bytes) -> InboundEvent | Handshake | None:
    """The event of a verified interaction; a ``Handshake`` for PING (PONG) and autocomplete."""
    payload = json_object(body)
    kind = payload.get("type")
    if kind == PING:
        return Handshake.json(PONG)
    if kind == AUTOCOMPLETE:
        return Handshake.json(_NO_CHOICES)
    interaction_id = str_field(payload.get("id"))
    if interaction_id is None or not isinstance(kind, int) or kind not in KINDS:
        raise MalformedPayload("not an interaction")
    guild = str_field(payload.get("guild_id"))
    user = str_field(obj(obj(payload.get("member")).get("user")).get("id")) if guild else None
    if guild is None:
        user = str_field(obj(payload.get("user")).get("id"))
    identity = ChannelIdentity("discord", guild or "dm", user) if user else None
    application = str_field(payload.get("application_id"))
    token = str_field(payload.get("token"))
    reply = ReplyTarget("discord", {"application_id": application, "token": token}) if application and token \
        else None
    channel = str_field(payload.get("channel_id"))
    return InboundEvent(
        channel="discord", kind=KINDS[kind], payload=payload, identity=identity, delivery_id=interaction_id,
        text=_text(obj(payload.get("data"))), reply=reply, thread=channel,
    )


def _text(data: dict[str, Any]) -> str | None:
    """A command's option values (nested sub-commands flattened), or a component's ``custom_id``."""
    words: list[str] = []
    stack = list(reversed(data.get("options") or [])) if isinstance(data.get("options"), list) else []
    while stack and len(words) < 100:
        option = obj(stack.pop())
        value = option.get("value")
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            words.append(str(value))
        nested = option.get("options")
        if isinstance(nested, list):
            stack.extend(reversed(nested))
    if words:
        return " ".join(words)
    custom_id = data.get("custom_id")
    return custom_id if isinstance(custom_id, str) else None
