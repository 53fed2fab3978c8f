"""A tiny HTTP server speaking OpenAI's ``POST /v1/embeddings`` wire format, for tests.

Vectors are deterministic per text (seeded from its bytes), so a test can check which vector went
back for which input. Honors ``encoding_format`` (``float`` or the SDK's default ``base64``) and
``dimensions``; records every request; can be told to fail, short-change or report a cost.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


def expected_vector(text: str, dims: int) -> list[float]:
    """The vector the server returns for ``text`` (float32-rounded, as base64 transport delivers it)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    vec = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return [float(x) for x in vec / np.linalg.norm(vec)]


@dataclass
class FakeEmbeddingsServer:
    """State shared with the handler thread."""

    default_dims: int = 8
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    fail_status: list[int] = field(default_factory=list)  # pop one status per request while non-empty
    report_cost: float | None = None
    drop_last: bool = False
    base_url: str = ""


def _handler(state: FakeEmbeddingsServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            if self.path != "/v1/embeddings":
                self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                return
            if state.fail_status:
                status = state.fail_status.pop(0)
                self._send(status, {"error": {"message": f"injected {status}", "type": "server_error"}})
                return
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            dims = int(body.get("dimensions") or state.default_dims)
            data = []
            for i, text in enumerate(inputs):
                vec = expected_vector(text, dims)
                emb: Any = vec
                if body.get("encoding_format") == "base64":
                    emb = base64.b64encode(np.array(vec, dtype="<f4").tobytes()).decode()
                data.append({"object": "embedding", "index": i, "embedding": emb})
            if state.drop_last:
                data = data[:-1]
            data.reverse()  # the SDK must order by ``index``, not by position
            tokens = sum(len(t.split()) for t in inputs)
            usage: dict[str, Any] = {"prompt_tokens": tokens, "total_tokens": tokens}
            if state.report_cost is not None:
                usage["cost"] = state.report_cost
            self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

    return Handler


@contextmanager
def running_server(**options: Any) -> Iterator[FakeEmbeddingsServer]:
    """Start the server on a free loopback port; stop it on exit."""
    state = FakeEmbeddingsServer(**options)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
