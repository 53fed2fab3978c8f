"""What the provider stand-in servers share: a JSON / server-sent-events handler and a threaded server
on 127.0.0.1 with an OS-assigned port."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StubHandler(BaseHTTPRequestHandler):
    """A request handler that answers JSON or an event stream and keeps pytest output clean."""

    def log_message(self, *args: Any) -> None:
        pass

    def read_json(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)

    def send_events(self, events: Iterable[str], delay_s: Callable[[], float] = lambda: 0.0) -> None:
        """Send ``events`` (each a complete SSE event, blank line included), flushing each one and
        pausing ``delay_s()`` seconds after it (read per event, so a test can speed a stream up)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in events:
            self.wfile.write(event.encode())
            self.wfile.flush()
            pause = delay_s()
            if pause > 0:
                time.sleep(pause)
        self.close_connection = True


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler], name: str) -> Iterator[str]:
    """Serve ``handler`` in a thread for the block; yields ``http://127.0.0.1:<port>``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
