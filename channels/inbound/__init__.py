"""Verified webhook requests as ``InboundEvent``s: the platform-set identity, the payload, where to
reply, the dedupe key — and the handshakes (Slack's challenge, GitHub's ping, Discord's PING)."""

from channels.inbound.discord import parse_discord
from channels.inbound.event import (
    CHANNELS,
    Channel,
    ChannelIdentity,
    Handshake,
    InboundEvent,
    MalformedPayload,
    ReplyTarget,
)
from channels.inbound.github import parse_github
from channels.inbound.slack import parse_slack

__all__ = [
    "CHANNELS",
    "Channel",
    "ChannelIdentity",
    "Handshake",
    "InboundEvent",
    "MalformedPayload",
    "ReplyTarget",
    "parse_discord",
    "parse_github",
    "parse_slack",
]
