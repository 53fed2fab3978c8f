"""Local HTTP servers speaking the provider wire formats the reply deliverers use.

- ``SlackStandIn``: Slack Web API ``chat.postMessage`` and ``conversations.replies`` (bearer token,
  JSON or form bodies, ``{"ok": ...}`` envelopes, message metadata, cursor pagination);
- ``GitHubStandIn``: REST ``POST``/``GET /repos/{owner}/{repo}/issues/{number}/comments`` (Link
  pagination);
- ``DiscordStandIn``: ``PATCH /webhooks/{application_id}/{token}/messages/@original``.

Each binds 127.0.0.1 on a free port and records what it received. ``hold_posts_s`` makes the
server record a post and then hold its answer, so a test can kill the poster mid-delivery.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


class _StandIn:
    """A threaded HTTP server on a free loopback port; subclasses implement ``route``."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []
        self.hold_posts_s = 0.0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                split = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(split.query).items()}
                with owner.lock:
                    owner.requests.append((self.command, split.path))
                status, body, headers = owner.route(self.command, split.path, query, raw, dict(self.headers))
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Base URL of the stand-in."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> _StandIn:
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def authorized(self, headers: dict[str, str]) -> bool:
        return self.token is None or headers.get("Authorization") == f"Bearer {self.token}"

    def hold(self) -> None:
        """After recording a post: keep the poster waiting (the kill-during-delivery window)."""
        if self.hold_posts_s:
            time.sleep(self.hold_posts_s)

    def route(
        self, method: str, path: str, query: dict[str, str], raw: bytes, headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        raise NotImplementedError


class SlackStandIn(_StandIn):
    """Slack's Web API at ``<url>/api/``: messages live per channel, threads by ``thread_ts``."""

    def __init__(self, token: str = "xoxb-test") -> None:
        super().__init__(token)
        self.messages: list[dict[str, Any]] = []
        self._ts = 1_700_000_000

    @property
    def api_url(self) -> str:
        return self.url + "/api/"

    def posts(self) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(m) for m in self.messages]

    def route(
        self, method: str, path: str, query: dict[str, str], raw: bytes, headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        args = dict(query)
        if raw:
            if headers.get("Content-Type", "").startswith("application/json"):
                args.update(json.loads(raw))
            else:
                args.update({k: v[-1] for k, v in parse_qs(raw.decode()).items()})
        if not self.authorized(headers):
            return 200, {"ok": False, "error": "invalid_auth"}, {}
        if path == "/api/chat.postMessage":
            if not args.get("channel") or not args.get("text"):
                return 200, {"ok": False, "error": "no_text"}, {}
            with self.lock:
                self._ts += 1
                message = {
                    "type": "message",
                    "ts": f"{self._ts}.000100",
                    "channel": args["channel"],
                    "thread_ts": args.get("thread_ts"),
                    "text": args["text"],
                    "bot_id": "B0TEST",
                }
                metadata = args.get("metadata")
                if isinstance(metadata, str):
                    metadata = json.loads(metadata)
                if metadata:
                    message["metadata"] = metadata
                self.messages.append(message)
            self.hold()
            return 200, {"ok": True, "channel": args["channel"], "ts": message["ts"], "message": message}, {}
        if path == "/api/conversations.replies":
            with self.lock:
                thread = [
                    m
                    for m in self.messages
                    if m["channel"] == args.get("channel") and m.get("thread_ts") == args.get("ts")
                ]
            include = str(args.get("include_all_metadata")).lower() in ("1", "true")
            shown = [m if include else {k: v for k, v in m.items() if k != "metadata"} for m in thread]
            start = int(args.get("cursor") or 0)
            limit = int(args.get("limit") or 100)
            page = shown[start : start + limit]
            more = start + limit < len(shown)
            return (
                200,
                {
                    "ok": True,
                    "messages": page,
                    "has_more": more,
                    "response_metadata": {"next_cursor": str(start + limit) if more else ""},
                },
                {},
            )
        return 200, {"ok": False, "error": "unknown_method"}, {}


class GitHubStandIn(_StandIn):
    """GitHub's REST API for issue comments."""

    def __init__(self, token: str = "ghs_test") -> None:
        super().__init__(token)
        self.comments: dict[tuple[str, int], list[dict[str, Any]]] = {}

    def route(
        self, method: str, path: str, query: dict[str, str], raw: bytes, headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        if not self.authorized(headers):
            return 401, {"message": "Bad credentials"}, {}
        parts = path.strip("/").split("/")
        if len(parts) != 6 or parts[0] != "repos" or parts[3] != "issues" or parts[5] != "comments":
            return 404, {"message": "Not Found"}, {}
        key = (f"{parts[1]}/{parts[2]}", int(parts[4]))
        if method == "POST":
            body = json.loads(raw)["body"]
            with self.lock:
                thread = self.comments.setdefault(key, [])
                comment = {
                    "id": 1000 + sum(len(c) for c in self.comments.values()),
                    "body": body,
                    "user": {"login": "lunora[bot]", "type": "Bot"},
                }
                thread.append(comment)
            self.hold()
            return 201, comment, {}
        per_page = int(query.get("per_page", 30))
        page = int(query.get("page", 1))
        with self.lock:
            thread = list(self.comments.get(key, []))
        chunk = thread[(page - 1) * per_page : page * per_page]
        links = {}
        if page * per_page < len(thread):
            links["Link"] = f'<{self.url}{path}?per_page={per_page}&page={page + 1}>; rel="next"'
        return 200, chunk, links


class DiscordStandIn(_StandIn):
    """Discord's interaction webhooks: the original response, edited in place."""

    def __init__(self) -> None:
        super().__init__(None)
        self.originals: dict[tuple[str, str], dict[str, Any]] = {}
        self.edits = 0

    def route(
        self, method: str, path: str, query: dict[str, str], raw: bytes, headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        parts = path.strip("/").split("/")
        original = len(parts) == 5 and parts[0] == "webhooks" and parts[3:] == ["messages", "@original"]
        if method != "PATCH" or not original:
            return 404, {"message": "404: Not Found", "code": 0}, {}
        content = json.loads(raw).get("content")
        with self.lock:
            self.edits += 1
            self.originals[(parts[1], parts[2])] = {"id": "M1", "content": content}
        return 200, {"id": "M1", "content": content}, {}


@contextmanager
def running(standin: _StandIn) -> Iterator[Any]:
    """Start ``standin`` for the duration of the block."""
    standin.start()
    try:
        yield standin
    finally:
        standin.close()
