"""A tiny HTTP server speaking OpenAI's chat-completions and embeddings wire format, for tests.

The test queues the completions it wants returned (``reply`` builds one); the server records every
request body and header, can fail a request with a given status first, and speaks plain HTTP on
127.0.0.1 with an OS-assigned port — no network, no mocked SDK.

- ``POST /v1/chat/completions`` with ``"stream": true`` sends the queued reply as server-sent
  ``chat.completion.chunk`` events: the content in pieces of ``stream_piece`` characters, each tool
  call's arguments in pieces, a final chunk with the finish reason, then (when the request asked with
  ``stream_options.include_usage``) a usage-only chunk, then ``data: [DONE]``.
- ``POST /v1/embeddings`` answers every input with a deterministic unit vector of
  ``embedding_dimensions`` derived from the text (``fake_embedding``), usage = words of the inputs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from stub_http import StubHandler, serve


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
    # retry-after-ms keeps the SDK's backoff short in tests; a test of Retry-After sets its own
    fail_headers: dict[str, str] = field(default_factory=lambda: {"retry-after-ms": "10"})
    times: list[float] = field(default_factory=list)  # time.monotonic() of every request
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    base_url: str = ""
    stream_piece: int = 3
    stream_delay_s: float = 0.0
    """Pause after each streamed chunk (read per chunk: a test may change it mid-stream)."""
    hold_after: int | None = None
    """The next streamed reply stops after this many chunks until ``release`` is set (then goes on)."""
    release: threading.Event = field(default_factory=threading.Event)
    embedding_dimensions: int = 8
    embedding_cost: float | None = None


def fake_embedding(text: str, dimensions: int) -> list[float]:
    """The unit vector the server returns for ``text`` (so a test can check order and alignment)."""
    digest = hashlib.sha256(text.encode()).digest()
    raw = [digest[i % len(digest)] - 127.5 for i in range(dimensions)]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [v / norm for v in raw]


def stream_chunks(body: dict[str, Any], piece: int, include_usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects that stream the completion ``body``."""
    choice = body["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": body["id"], "object": "chat.completion.chunk", "created": body["created"],
            "model": body["model"],
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    content = message.get("content") or ""
    chunks += [chunk({"content": content[i : i + piece]}) for i in range(0, len(content), piece)]
    for index, call in enumerate(message.get("tool_calls") or []):
        head = {"index": index, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""}}
        chunks.append(chunk({"tool_calls": [head]}))
        args = call["function"]["arguments"]
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": args[i : i + piece]}}]})
            for i in range(0, len(args), piece)
        ]
    chunks.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = body["usage"]
        chunks.append(last)
    return chunks


def _handler(state: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(StubHandler):
        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            self.send_json(status, body, headers)

        def _embeddings(self, body: dict[str, Any]) -> None:
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            dims = int(body.get("dimensions") or state.embedding_dimensions)
            usage: dict[str, Any] = {"prompt_tokens": sum(len(str(t).split()) for t in inputs)}
            usage["total_tokens"] = usage["prompt_tokens"]
            if state.embedding_cost is not None:
                usage["cost"] = state.embedding_cost
            vectors = [fake_embedding(str(t), dims) for t in inputs]
            encoded: list[Any] = vectors
            if body.get("encoding_format") == "base64":  # what the SDK asks for by default
                encoded = [base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() for v in vectors]
            data = [{"object": "embedding", "index": i, "embedding": e} for i, e in enumerate(encoded)]
            self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

        def do_POST(self) -> None:
            body = self.read_json()
            state.times.append(time.monotonic())
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            if self.path == "/v1/embeddings" and not state.fail_status:
                self._embeddings(body)
                return
            if self.path not in ("/v1/chat/completions", "/v1/embeddings"):
                self._send(
                    404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}
                )
                return
            if state.fail_status:
                status = state.fail_status.pop(0)
                self._send(
                    status,
                    {"error": {"message": f"injected {status}", "type": "server_error"}},
                    state.fail_headers,
                )
                return
            if not state.replies:
                self._send(500, {"error": {"message": "no reply queued", "type": "server_error"}})
                return
            if body.get("stream"):
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                chunks = stream_chunks(state.replies.pop(0), state.stream_piece, include_usage)
                hold, state.hold_after = state.hold_after, None
                sent = [0]

                def pause() -> float:
                    sent[0] += 1
                    if sent[0] == hold:
                        state.release.wait(60)
                    return state.stream_delay_s

                self.send_events([*(f"data: {json.dumps(c)}\n\n" for c in chunks), "data: [DONE]\n\n"], pause)
                return
            self._send(200, state.replies.pop(0))

    return Handler


@contextmanager
def chat_server() -> Iterator[ChatServer]:
    """Run the server in a thread for the duration of the block."""
    state = ChatServer()
    with serve(_handler(state), "fake-chat-server") as url:
        state.base_url = f"{url}/v1"
        yield state
