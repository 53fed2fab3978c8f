"""The reference sandbox server: the sandbox HTTP protocol ``container_tool`` speaks, served with the
standard library over a workspace folder. Run it with
``python -m lunora_jobs.toolbox.sandbox.reference_server --port 8700`` (it prints its URL).

The protocol (JSON bodies):

- ``POST /exec`` ``{"command": ["ls", "-l"] | "ls -l | wc -l", "timeout_s": 5}``: run a command in the
  workspace (a string runs with ``/bin/sh -c``) → ``{"exit_code", "stdout", "stderr", "timed_out",
  "truncated", "duration_ms"}``. Isolation and limits: ``runner.py``.
- ``GET /files/<path>`` → the file's text; ``PUT /files/<path>`` (body: the content) writes it;
  paths confined to the workspace like ``fs_tool``'s.
- ``GET /health`` → ``{"ok": true}``.

Any other route answers 404. A real sandbox (a container image serving the same routes) can add
its own routes; ``container_tool`` reaches them with ``op: fetch``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lunora_jobs.errors import SandboxPathError
from lunora_jobs.toolbox.sandbox.paths import confine
from lunora_jobs.toolbox.sandbox.runner import NOBODY, Limits, network_namespace_prefix, run_command
from lunora_jobs.toolbox.sandbox.store import LocalDirStore

EXEC_ROUTE = "/exec"
MAX_BODY = 1_000_000


class SandboxServer(ThreadingHTTPServer):
    """The HTTP server with its workspace, limits and isolation prefix."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], workspace: str, limits: Limits) -> None:
        self.workspace, self.limits = workspace, limits
        self.prefix = network_namespace_prefix()  # refuses to start without network isolation
        self.files = LocalDirStore(workspace)
        if os.geteuid() == 0:
            os.chown(workspace, NOBODY, NOBODY)  # the commands run as nobody
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: SandboxServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet: one line per request is noise
        return

    def _reply(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError(f"the body is over {MAX_BODY} bytes")
        return self.rfile.read(length)

    def do_GET(self) -> None:
        route = self.path.split("?", 1)[0]
        if route == "/health":
            return self._reply(200, {"ok": True})
        if route.startswith("/files/"):
            try:
                data = self.server.files.read(confine(route[len("/files/"):]), MAX_BODY)
            except (SandboxPathError, OSError, ValueError) as exc:
                return self._reply(404, {"error": str(exc)})
            return self._reply(200, data, "text/plain; charset=utf-8")
        return self._reply(404, {"error": f"no route {route}"})

    def do_PUT(self) -> None:
        route = self.path.split("?", 1)[0]
        if not route.startswith("/files/"):
            return self._reply(404, {"error": f"no route {route}"})
        try:
            key = confine(route[len("/files/"):])
            self.server.files.write(key, self._body())
        except (SandboxPathError, OSError, ValueError) as exc:
            return self._reply(400, {"error": str(exc)})
        return self._reply(200, {"written": "/".join(key)})

    def do_POST(self) -> None:
        route = self.path.split("?", 1)[0]
        if route != EXEC_ROUTE:
            return self._reply(404, {"error": f"no route {route}"})
        try:
            request = json.loads(self._body() or b"{}")
            argv = _argv(request.get("command"))
            timeout = min(float(request.get("timeout_s") or self.server.limits.timeout_s),
                          self.server.limits.timeout_s)
        except (ValueError, TypeError) as exc:
            return self._reply(400, {"error": str(exc)})
        limits = Limits(**{**asdict(self.server.limits), "timeout_s": timeout})
        result = run_command(argv, self.server.workspace, limits, self.server.prefix)
        return self._reply(200, asdict(result))


def _argv(command: Any) -> list[str]:
    if isinstance(command, str) and command:
        return ["/bin/sh", "-c", command]
    if isinstance(command, list) and command and all(isinstance(a, str) and "\x00" not in a for a in command):
        return list(command)
    raise ValueError('command must be a non-empty string or a list of strings, e.g. ["ls", "-l"]')


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted; prints ``http://host:port`` on its first line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8700)
    parser.add_argument("--workspace", default=None, help="default: a new temporary folder")
    parser.add_argument("--timeout-s", type=float, default=10.0)
    parser.add_argument("--max-output", type=int, default=64_000)
    args = parser.parse_args(argv)
    workspace = args.workspace or tempfile.mkdtemp(prefix="lunora-sandbox-")
    server = SandboxServer((args.host, args.port), workspace,
                           Limits(timeout_s=args.timeout_s, max_output=args.max_output))
    print(f"http://{args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
