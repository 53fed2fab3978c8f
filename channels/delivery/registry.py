"""Which ``Deliverer`` posts a channel's replies: registered ones first, else the built-in one
configured from ``Settings`` (API base URLs, the SMTP relay, the timeout)."""

from __future__ import annotations

from channels.delivery.base import Deliverer, DeliveryError
from channels.delivery.discord import DiscordDeliverer
from channels.delivery.email import EmailDeliverer
from channels.delivery.github import GitHubDeliverer
from channels.delivery.slack import SlackDeliverer
from lunora_jobs.config import Settings

_REGISTERED: dict[str, Deliverer] = {}


def register_deliverer(channel: str, deliverer: Deliverer) -> None:
    """Post ``channel``'s replies with ``deliverer`` in this process (replaces the built-in one)."""
    _REGISTERED[channel] = deliverer


def deliverer_for(channel: str, settings: Settings) -> Deliverer:
    """The deliverer of ``channel``; ``DeliveryError`` when none is known or configured."""
    found = _REGISTERED.get(channel)
    if found is not None:
        return found
    timeout = settings.reply_timeout_s
    if channel == "slack":
        return SlackDeliverer(settings.slack_api_url, timeout_s=max(1, round(timeout)))
    if channel == "github":
        return GitHubDeliverer(settings.github_api_url, timeout_s=timeout)
    if channel == "discord":
        return DiscordDeliverer(settings.discord_api_url, timeout_s=timeout)
    if channel == "email":
        host, sep, port = (settings.smtp_relay or "").rpartition(":")
        if not sep or not host or not port.isdigit() or not settings.email_from:
            raise DeliveryError("email replies need LUNORA_SMTP_RELAY=host:port and LUNORA_EMAIL_FROM")
        return EmailDeliverer(host, int(port), settings.email_from, timeout_s=timeout)
    raise DeliveryError(f"no deliverer for channel {channel!r}; register_deliverer({channel!r}, ...)")
