"""Starting the test MCP server (``mcp_test_server.py``) over stdio or streamable HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ports import free_port

from lunora_jobs.toolbox import McpServer

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))


def stdio_server(call_log: Path, pid_file: Path | None = None) -> McpServer:
    """The test server as a stdio command; every tool call is appended to ``call_log``."""
    env = {"MCP_CALL_LOG": str(call_log)}
    if pid_file is not None:
        env["MCP_PID_FILE"] = str(pid_file)
    return McpServer.stdio(sys.executable, [SERVER], env=env, timeout_s=60)


def calls(call_log: Path) -> list[str]:
    """The tools the server ran, in order."""
    return call_log.read_text().split() if call_log.exists() else []


@contextmanager
def http_server(call_log: Path) -> Iterator[McpServer]:
    """The test server on a free loopback port over streamable HTTP, stopped at the end."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port)], env={"MCP_CALL_LOG": str(call_log), "PATH": ""},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the MCP test server did not listen on {port}") from None
                time.sleep(0.1)
        yield McpServer.http(f"http://127.0.0.1:{port}/mcp", timeout_s=60)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
