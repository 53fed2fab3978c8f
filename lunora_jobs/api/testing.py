"""Start and stop real ``lunora api`` processes (or an in-process server) from tests and benchmarks.

Example::

    with ApiProcess(env={"LUNORA_APP": "myapp:app", "LUNORA_API_TOKENS_FILE": "tokens.json"}) as api:
        httpx.get(f"{api.url}/healthz")

    with serve_in_thread(create_app(app, authenticator)) as url:   # the embedded mode, one process
        httpx.get(f"{url}/healthz")

    with serve_app(app, authenticator) as url:    # the same, creating the tables and closing the app
        ...
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from lunora_jobs._child_process import LoggedChildProcess
from lunora_jobs.api.app import create_app
from lunora_jobs.api.auth.base import Authenticator
from lunora_jobs.runtime import Lunora


def free_port() -> int:
    """A port nobody listens on right now (127.0.0.1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def serve_in_thread(asgi_app: Any, timeout: float = 30.0) -> Iterator[str]:
    """Serve ``asgi_app`` with uvicorn on a thread of this process (127.0.0.1, a free port); yields
    its base URL and stops the server on exit."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(asgi_app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, name="lunora-api-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class ApiProcess(LoggedChildProcess):
    """``lunora api`` in its own process group on 127.0.0.1 and a free port."""

    def __init__(self, env: Mapping[str, str], *, workers: int = 1, extra_args: Sequence[str] = ()) -> None:
        self.env = {**os.environ, **env}
        self.workers = workers
        self.extra_args = list(extra_args)
        self.port = 0
        self._dir = Path(tempfile.mkdtemp(prefix="lunora-api-"))
        self.log_path = self._dir / "api.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        """The base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0, *, port: int | None = None) -> ApiProcess:
        """Start and wait until ``/healthz`` answers (a free port lost to a race is retried).
        ``port``: listen there (e.g. the port of a stopped predecessor, to test reconnects)."""
        import httpx

        for _ in range(1 if port else 3):
            self.port = port or free_port()
            self._log = self.log_path.open("ab")
            command = [sys.executable, "-m", "lunora_jobs.cli", "api", "--port", str(self.port),
                       "--workers", str(self.workers), "--log-level", "warning", *self.extra_args]
            self.proc = subprocess.Popen(command, env=self.env, stdout=self._log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                        return self
                time.sleep(0.1)
            if self.proc.poll() is None:
                self.stop()
                raise TimeoutError(f"lunora api not ready after {timeout}s:\n{self.log()}")
            self._close_log()
            if "address already in use" not in self.log().lower():
                raise RuntimeError(f"lunora api exited with {self.proc.returncode}:\n{self.log()}")
        raise RuntimeError(f"lunora api could not bind a port:\n{self.log()}")

    def __enter__(self) -> ApiProcess:
        return self.start() if self.proc is None else self


@contextlib.contextmanager
def serve_app(lunora: Lunora, authenticator: Authenticator, **api_options: Any) -> Iterator[str]:
    """The embedded mode in one step: ``lunora``'s tables created, its API (``create_app`` with
    ``api_options``) served on a thread; yields the base URL, then stops the server and closes the app."""
    try:
        lunora.store.ensure_tables()
        with serve_in_thread(create_app(lunora, authenticator, **api_options)) as url:
            yield url
    finally:
        lunora.close()
