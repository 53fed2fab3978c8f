"""A tiny HTTP server speaking Anthropic's ``POST /v1/messages`` wire format, for tests.

The test queues the messages it wants returned (``message`` builds one from content blocks); the server
records every request body and header, can fail a request with a given status first, and speaks plain
HTTP on 127.0.0.1 with an OS-assigned port. A request with ``"stream": true`` gets the queued message as
the Messages API's server-sent events: ``message_start`` (input usage), per block ``content_block_start``
/ ``content_block_delta`` (``text_delta`` pieces, or ``input_json_delta`` pieces of a ``tool_use`` input)
/ ``content_block_stop``, a ``ping``, ``message_delta`` (stop reason, output usage), ``message_stop``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from stub_http import StubHandler, serve


def text_block(text: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": text}


def tool_use_block(id: str, name: str, input: dict[str, Any]) -> dict[str, Any]:
    """A tool_use content block."""
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def message(
    *blocks: dict[str, Any],
    stop_reason: str = "end_turn",
    input_tokens: int = 21,
    output_tokens: int = 9,
    cache_read_input_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
    model: str = "claude-test-2026",
) -> dict[str, Any]:
    """One Messages API response body."""
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(blocks),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read_input_tokens,
            "cache_creation_input_tokens": cache_creation_input_tokens,
        },
    }


def stream_events(body: dict[str, Any], piece: int) -> list[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` pairs that stream the message ``body``."""
    start = dict(body, content=[], stop_reason=None, stop_sequence=None)
    start["usage"] = dict(body["usage"], output_tokens=1)
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(body["content"]):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            text = block["text"]
            deltas = [{"type": "text_delta", "text": text[i : i + piece]} for i in range(0, len(text), piece)]
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"])
            deltas = [
                {"type": "input_json_delta", "partial_json": raw[i : i + piece]}
                for i in range(0, len(raw), piece)
            ]
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
        )
        if index == 0:
            events.append(("ping", {"type": "ping"}))
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": body["usage"]["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


@dataclass
class MessagesServer:
    """State shared with the handler thread."""

    replies: list[dict[str, Any]] = field(default_factory=list)
    fail_status: list[int] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    base_url: str = ""
    stream_piece: int = 4


def _handler(state: MessagesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(StubHandler):
        def _error(self, status: int, kind: str, text: str) -> None:
            body = {"type": "error", "error": {"type": kind, "message": text}}
            self.send_json(status, body, {"retry-after-ms": "10"})

        def do_POST(self) -> None:
            body = self.read_json()
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            if self.path != "/v1/messages":
                self._error(404, "not_found_error", f"no route {self.path}")
                return
            if "max_tokens" not in body or "model" not in body or "messages" not in body:
                self._error(400, "invalid_request_error", "model, messages and max_tokens are required")
                return
            if state.fail_status:
                status = state.fail_status.pop(0)
                kind = "overloaded_error" if status == 529 else "api_error"
                self._error(status, kind, f"injected {status}")
                return
            if not state.replies:
                self._error(500, "api_error", "no reply queued")
                return
            reply = state.replies.pop(0)
            if not body.get("stream"):
                self.send_json(200, reply)
                return
            events = stream_events(reply, state.stream_piece)
            self.send_events(f"event: {event}\ndata: {json.dumps(data)}\n\n" for event, data in events)

    return Handler


@contextmanager
def messages_server() -> Iterator[MessagesServer]:
    """Run the server in a thread for the duration of the block."""
    state = MessagesServer()
    with serve(_handler(state), "fake-messages-server") as url:
        state.base_url = url
        yield state
