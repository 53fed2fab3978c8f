"""Start and stop real ``lunora api`` processes from tests and benchmarks.

Example::

    with ApiProcess(env={"LUNORA_APP": "myapp:app", "LUNORA_API_TOKENS_FILE": "tokens.json"}) as api:
        httpx.get(f"{api.url}/healthz")
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any


def free_port() -> int:
    """A port nobody listens on right now (127.0.0.1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ApiProcess:
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

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group, SIGKILL after ``timeout``."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._close_log()

    def log(self) -> str:
        """The process's output so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> ApiProcess:
        return self.start() if self.proc is None else self

    def __exit__(self, *_: Any) -> None:
        self.stop()
