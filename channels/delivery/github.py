"""GitHub replies: an issue / pull-request comment through the REST API.

The comment ends with a hidden ``<!-- lunora-reply:<key> -->`` marker: a retried delivery lists the
issue's comments and posts only if none carries its key (the marker also keeps the ingress from
treating our own comment, which GitHub sends back as an ``issue_comment`` event, as a new request).
"""

from __future__ import annotations

import httpx

from channels.delivery.base import Delivered, DeliveryError, Reply
from channels.inbound.github import REPLY_MARKER

DEFAULT_API_URL = "https://api.github.com"
MAX_BODY = 65_000  # GitHub refuses comment bodies over 65,536 characters
MAX_PAGES = 30


class GitHubDeliverer:
    """Posts with the token named by ``on_inbound["token_env"]`` (an installation token or a PAT
    with ``issues:write``/``pull_requests:write``)."""

    def __init__(self, api_url: str = DEFAULT_API_URL, timeout_s: float = 15.0) -> None:
        self.api_url = api_url.rstrip("/")
        self.timeout_s = timeout_s

    def deliver(self, reply: Reply) -> Delivered:
        """Comment on the issue unless a retry finds our marker there already."""
        if not reply.token:
            raise DeliveryError("no GitHub token: set on_inbound['token_env'] and export it")
        address = reply.target.address
        url = f"{self.api_url}/repos/{address['repo']}/issues/{int(address['number'])}/comments"
        marker = f"{REPLY_MARKER}{reply.key} -->"
        headers = {"Authorization": f"Bearer {reply.token}", "Accept": "application/vnd.github+json",
                   "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "lunora-ingress"}
        try:
            with httpx.Client(timeout=self.timeout_s, headers=headers) as client:
                if reply.retry and _has_marker(client, url, marker):
                    return "already-posted"
                body = reply.text[: MAX_BODY - len(marker) - 2] + "\n\n" + marker
                response = client.post(url, json={"body": body})
                response.raise_for_status()
        except httpx.HTTPError as exc:
            raise DeliveryError(f"GitHub refused the reply: {type(exc).__name__}") from exc
        return "posted"


def _has_marker(client: httpx.Client, url: str, marker: str) -> bool:
    next_url: str | None = url
    params: dict[str, int] | None = {"per_page": 100}
    for _ in range(MAX_PAGES):
        if next_url is None:
            return False
        response = client.get(next_url, params=params)
        response.raise_for_status()
        if any(marker in str(comment.get("body") or "") for comment in response.json()):
            return True
        next_url = response.links.get("next", {}).get("url")
        params = None  # the next link carries them
    return False
