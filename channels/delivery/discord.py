"""Discord replies: the deferred interaction response is edited into the answer.

``PATCH /webhooks/{application_id}/{token}/messages/@original`` — one of the interaction follow-up
webhook endpoints, and idempotent: a retried delivery rewrites the same message instead of adding
one. The interaction token is valid for 15 minutes after the interaction.
"""

from __future__ import annotations

import httpx

from channels.delivery.base import Delivered, DeliveryError, Reply

DEFAULT_API_URL = "https://discord.com/api/v10"
MAX_CONTENT = 2000


class DiscordDeliverer:
    """Needs no token: the interaction token in the reply address authorises the webhook."""

    def __init__(self, api_url: str = DEFAULT_API_URL, timeout_s: float = 15.0) -> None:
        self.api_url = api_url.rstrip("/")
        self.timeout_s = timeout_s

    def deliver(self, reply: Reply) -> Delivered:
        """Replace the "thinking…" message with the answer (clipped to Discord's 2,000 characters)."""
        address = reply.target.address
        url = f"{self.api_url}/webhooks/{address['application_id']}/{address['token']}/messages/@original"
        text = reply.text if len(reply.text) <= MAX_CONTENT else reply.text[: MAX_CONTENT - 1] + "…"
        try:
            response = httpx.patch(url, json={"content": text, "allowed_mentions": {"parse": []}},
                                   timeout=self.timeout_s)
            response.raise_for_status()
        except httpx.HTTPError as exc:
            raise DeliveryError(f"Discord refused the reply: {type(exc).__name__}") from exc
        return "posted"
