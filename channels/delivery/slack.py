"""Slack replies: ``chat.postMessage`` in the originating thread, through slack-sdk's ``WebClient``.

Each post carries message metadata ``{"event_type": "lunora_reply", "event_payload": {"key": ...}}``;
a retried delivery first reads the thread (``conversations.replies`` with ``include_all_metadata``)
and posts only if no message carries its key. The bot token needs ``chat:write`` and, for that
check, the ``*:history`` scope of the conversation type.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from channels.delivery.base import Delivered, DeliveryError, Reply

log = logging.getLogger("channels.delivery")

EVENT_TYPE = "lunora_reply"
MAX_TEXT = 39_000  # chat.postMessage truncates text past 40,000 characters
MAX_PAGES = 20
DEFAULT_API_URL = "https://slack.com/api/"


class SlackDeliverer:
    """Posts with ``WebClient(token, base_url=api_url)`` (point ``api_url`` at a stand-in in tests)."""

    def __init__(self, api_url: str = DEFAULT_API_URL, timeout_s: int = 15) -> None:
        self.api_url = api_url if api_url.endswith("/") else api_url + "/"
        self.timeout_s = timeout_s

    def deliver(self, reply: Reply) -> Delivered:
        """Post ``reply.text`` in the thread, unless a retry finds it there already."""
        if not reply.token:
            raise DeliveryError("no Slack bot token: set on_inbound['token_env'] and export it")
        address = reply.target.address
        client = WebClient(token=reply.token, base_url=self.api_url, timeout=self.timeout_s)
        try:
            if reply.retry and self._already_posted(client, address, reply.key):
                return "already-posted"
            client.chat_postMessage(
                channel=address["channel"], thread_ts=address.get("thread_ts"), text=_clip(reply.text),
                metadata={"event_type": EVENT_TYPE, "event_payload": {"key": reply.key}},
            )
        except (SlackApiError, SlackClientError, OSError) as exc:
            raise DeliveryError(f"Slack refused the reply: {_reason(exc)}") from exc
        return "posted"

    def _already_posted(self, client: WebClient, address: dict[str, Any], key: str) -> bool:
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = client.conversations_replies(
                channel=address["channel"], ts=address["thread_ts"], include_all_metadata=True, limit=200,
                cursor=cursor,
            )
            for message in page.get("messages") or []:
                metadata = message.get("metadata") or {}
                payload = metadata.get("event_payload") or {}
                if metadata.get("event_type") == EVENT_TYPE and payload.get("key") == key:
                    return True
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if not page.get("has_more") or not cursor:
                return False
        log.warning("lunora delivery: Slack thread %s longer than %d pages; posting", address, MAX_PAGES)
        return False


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _reason(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    error = response.get("error") if response is not None and hasattr(response, "get") else None
    return str(error or type(exc).__name__)
