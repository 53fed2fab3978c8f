"""A tiny HTTP server speaking OpenAI's ``POST /v1/chat/completions`` wire format, for tests.

The test queues the completions it wants returned (``reply`` builds one); the server records every
request body and header, can fail a request with a given status first, and speaks plain HTTP on
127.0.0.1 with an OS-assigned port — no network, no mocked SDK.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def reply(
    *,
    content: str | None = None,
    tool_calls: Sequence[tuple[str, str, str]] = (),
    finish_reason: str = "stop",
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
    cached_tokens: int | None = None,
    cost: float | None = None,
    model: str = "test-model-2026",
) -> dict[str, Any]:
    """One chat.completion body; ``tool_calls`` are ``(id, name, raw JSON arguments)``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in tool_calls
        ]
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    if cost is not None:
        usage["cost"] = cost
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_780_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": usage,
    }


@dataclass
class ChatServer:
    """State shared with the handler thread."""

    replies: list[dict[str, Any]] = field(default_factory=list)
    fail_status: list[int] = field(default_factory=list)  # one injected failure per request while non-empty
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    base_url: str = ""


def _handler(state: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            if self.path != "/v1/chat/completions":
                self._send(
                    404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}
                )
                return
            if state.fail_status:
                status = state.fail_status.pop(0)
                # retry-after-ms keeps the SDK's backoff short in tests
                self._send(
                    status,
                    {"error": {"message": f"injected {status}", "type": "server_error"}},
                    {"retry-after-ms": "10"},
                )
                return
            if not state.replies:
                self._send(500, {"error": {"message": "no reply queued", "type": "server_error"}})
                return
            self._send(200, state.replies.pop(0))

    return Handler


@contextmanager
def chat_server() -> Iterator[ChatServer]:
    """Run the server in a thread for the duration of the block."""
    state = ChatServer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-chat-server", daemon=True
    )
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
