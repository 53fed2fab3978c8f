"""What a verified webhook becomes: an ``InboundEvent`` with the platform-set identity apart from the
attacker-controlled payload, where to reply, and the key that dedupes retries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Channel = Literal["slack", "github", "discord"]
CHANNELS: tuple[Channel, ...] = ("slack", "github", "discord")


@dataclass(frozen=True, slots=True)
class ChannelIdentity:
    """Who sent the event, from fields the platform itself sets in the signed request.

    - Slack: ``tenant`` = the workspace ``team_id``, ``user`` = the event's ``user``;
    - GitHub: ``tenant`` = the App installation id (``installation.id``; for a repository or
      organisation webhook ``<target type>:<target id>`` from ``X-GitHub-Hook-Installation-Target-*``),
      ``user`` = ``sender.id`` (the numeric id: logins can be renamed);
    - Discord: ``tenant`` = ``guild_id`` (``dm`` outside a guild), ``user`` = the member's user id.

    Never from message text. An event without both parts has no identity and starts no run.
    """

    channel: Channel
    tenant: str
    user: str

    def default_owner(self) -> str:
        """The default run owner: ``<channel>:<tenant>:<user>`` (e.g. ``slack:T0001:U0002``)."""
        return f"{self.channel}:{self.tenant}:{self.user}"


@dataclass(frozen=True, slots=True)
class ReplyTarget:
    """Where the run's final answer goes back to: a channel and its JSON address.

    - ``slack``: ``{"team", "channel", "thread_ts"}`` (posted in the originating thread);
    - ``github``: ``{"repo", "number"}`` (an issue or pull-request comment);
    - ``discord``: ``{"application_id", "token"}`` (the interaction's follow-up webhook);
    - ``email``: ``{"to", "subject", "in_reply_to", "references"}``.
    """

    channel: str
    address: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The stored form."""
        return {"channel": self.channel, "address": dict(self.address)}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> ReplyTarget:
        """Inverse of ``to_json``."""
        return cls(str(value["channel"]), dict(value["address"]))


@dataclass(frozen=True, slots=True)
class InboundEvent:
    """A verified webhook request, as the ``map`` of ``on_inbound`` sees it.

    ``payload`` is the parsed body: signed by the platform, but its content (message text, titles)
    was typed by users — treat it as untrusted. ``identity`` is the trusted part; the run's owner is
    derived from it, never from the payload. ``kind`` is the Slack event type (``app_mention``), the
    GitHub event (``issue_comment``) or the Discord interaction type (``application_command``).
    ``text`` is the user's text when the event has one (Slack message text, GitHub comment or issue
    body, Discord command options joined by spaces).
    """

    channel: Channel
    kind: str
    payload: dict[str, Any]
    identity: ChannelIdentity | None
    delivery_id: str
    """The platform's id of this delivery (Slack ``event_id``, ``X-GitHub-Delivery``, Discord
    interaction id): retries and redeliveries carry the same one."""
    text: str | None = None
    reply: ReplyTarget | None = None
    thread: str | None = None
    """The conversation the event belongs to (Slack channel + thread, GitHub repo + issue, Discord
    channel); the default thread key is built from it and the identity."""
    retry: int = 0
    """Slack's ``X-Slack-Retry-Num`` (0 on the first delivery)."""
    headers: dict[str, str] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        """The parsed payload (as the seed's ``event.json()``)."""
        return self.payload

    @property
    def dedupe_key(self) -> str:
        """``<channel>:<delivery id>``: equal for every retry of one delivery."""
        return f"{self.channel}:{self.delivery_id}"

    def default_thread_key(self) -> str:
        """``<channel>:<conversation>:<user>`` — one thread per user per conversation, so the
        default owner (immutable per thread) never collides with another user's."""
        user = self.identity.user if self.identity else "anonymous"
        tenant = self.identity.tenant if self.identity else "-"
        return f"{self.channel}:{tenant}:{self.thread or self.delivery_id}:{user}"


@dataclass(frozen=True, slots=True)
class Handshake:
    """A protocol message answered by the ingress itself, after verification, without any run:
    Slack's ``url_verification`` challenge, GitHub's ``ping``, Discord's PING."""

    status: int
    body: bytes
    media_type: str = "application/json"

    @classmethod
    def json(cls, value: Any, status: int = 200) -> Handshake:
        """A JSON answer."""
        return cls(status, json.dumps(value).encode())


class MalformedPayload(ValueError):
    """A verified request whose body is not what the platform sends (answered 400, no detail)."""


def str_field(value: Any) -> str | None:
    """A non-empty identifier from JSON (numbers as their decimal form), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip() and len(value) <= 255:
        return value
    return None


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}
