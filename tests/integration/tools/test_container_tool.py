"""container_tool against the reference sandbox server (a subprocess runner in a temporary
workspace): exec isolated (no network, nobody, cleared environment, timeout, output and memory caps),
exec and any fetch that resolves to /exec gated by default, redirects never followed."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from suite_settings import service_unavailable

from lunora_jobs import container_tool, define_agent
from lunora_jobs.errors import ToolError
from lunora_jobs.testing import agent_harness, final_turn, tool_call_turn
from lunora_jobs.toolbox.sandbox.container import reaches_exec
from lunora_jobs.tools import ToolContext

pytestmark = pytest.mark.slow
CTX = ToolContext(idempotency_key="tool:sandbox:c1", run_id="r1", thread_key="t1", owner=None,
                  tool_call_id="c1")


@pytest.fixture(scope="module")
def sandbox_url() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lunora_jobs.toolbox.sandbox.reference_server", "--port", "0",
         "--timeout-s", "5", "--max-output", "1000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"PATH": "/usr/bin:/bin", "LUNORA_SANDBOX_TEST_SECRET": "s3cret"},
    )
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        if not line.startswith("http://127.0.0.1:"):
            proc.wait(timeout=30)
            error = proc.stderr.read() if proc.stderr else ""
            if "IsolationUnavailableError" in error:  # not root: no network namespace for the commands
                service_unavailable("the reference sandbox needs `unshare --net` (root): " + error[-300:])
            raise AssertionError(f"the reference sandbox did not start: {line} {error}")
        yield line
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class _Counter(BaseHTTPRequestHandler):
    hits: list[str] = []

    def log_message(self, *args: Any) -> None:
        return

    def _any(self) -> None:
        type(self).hits.append(self.path)
        if self.path == "/go":
            self.send_response(307)
            self.send_header("Location", "/exec")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    do_GET = do_POST = _any


@pytest.fixture
def counter() -> Iterator[tuple[str, list[str]]]:
    _Counter.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Counter.hits
    finally:
        server.shutdown()
        server.server_close()


def _exec(url: str, command: Any, **extra: Any) -> dict[str, Any]:
    tool = container_tool(url)
    input = {"op": "exec", "command": command, **extra}
    tool.validate(input)
    return tool.execute(input, CTX)


@pytest.mark.parametrize("path", [
    "/exec", "/exec/", "/./exec", "/a/../exec", "/files/../exec", "/%65xec", "/%2e/exec", "/%2Fexec",
    "/EXEC", "/Exec/", "/exec?x=1", "/exec#top", "/files/../../exec", "/exec/anything",
])
def test_a_fetch_that_resolves_to_exec_is_gated(path: str) -> None:
    tool = container_tool("http://127.0.0.1:1")
    assert reaches_exec(path)
    assert tool.requires_approval({"op": "fetch", "path": path, "method": "POST"})


def test_exec_is_gated_and_other_fetches_are_not() -> None:
    tool = container_tool("http://127.0.0.1:1")
    assert tool.requires_approval({"op": "exec", "command": "ls"})
    for path in ("/files/out.txt", "/health", "/executive", "/files/exec"):
        assert not tool.requires_approval({"op": "fetch", "path": path}), path
    assert not container_tool("http://127.0.0.1:1", needs_approval=False).requires_approval({"op": "exec"})


def test_exec_through_an_agent_waits_for_approval(sandbox_url: str) -> None:
    agent = define_agent(name="operator", model="offline", tools=[container_tool(sandbox_url)])
    harness = agent_harness(agent, script=[
        tool_call_turn("call_1", "sandbox", {"op": "exec", "command": "echo hello > out.txt && cat out.txt"}),
        tool_call_turn("call_2", "sandbox", {"op": "fetch", "path": "/files/out.txt"}),
        final_turn("done"),
    ])
    result = harness.run(input="say hello", thread_key="box-1")
    assert result.stopped is None  # the exec waits for a human
    harness.resolve("box-1", "call_1", approve=True)
    assert harness.result(result.run_id).text == "done"
    outputs = [json.loads(m.content) for m in harness.messages("box-1") if m.role == "tool"]
    assert outputs[0]["exit_code"] == 0 and outputs[0]["stdout"] == "hello\n"
    assert outputs[1] == {"status": 200, "path": "/files/out.txt", "body": "hello\n"}


def test_exec_has_no_network_not_even_loopback(sandbox_url: str, counter: tuple[str, list[str]]) -> None:
    url, hits = counter
    port = url.rsplit(":", 1)[1]
    probe = (f"import socket; s = socket.socket(); s.settimeout(3); "
             f"print(s.connect_ex(('127.0.0.1', {port})))")
    result = _exec(sandbox_url, ["python3", "-c", probe])
    assert result["exit_code"] == 0 and result["stdout"].strip() not in ("0", "")
    assert hits == []  # the counting server on the host's loopback was never reached


def test_exec_runs_as_nobody_with_a_cleared_environment(sandbox_url: str) -> None:
    result = _exec(sandbox_url, "id -u; env")
    lines = result["stdout"].splitlines()
    assert lines[0] == "65534"
    assert "s3cret" not in result["stdout"]
    assert {line.split("=", 1)[0] for line in lines[1:]} <= {"PATH", "HOME", "LANG", "PWD", "SHLVL", "_"}


def test_exec_is_killed_at_its_timeout(sandbox_url: str) -> None:
    started = time.monotonic()
    result = _exec(sandbox_url, ["sleep", "30"], timeout_s=1)
    assert result["timed_out"] and result["exit_code"] is None
    assert time.monotonic() - started < 10


def test_exec_output_and_memory_are_capped(sandbox_url: str) -> None:
    big = _exec(sandbox_url, "head -c 200000 /dev/zero | tr '\\0' a")
    assert big["truncated"] and big["stdout"] == "a" * 1000
    hog = _exec(sandbox_url, ["python3", "-c", "b = bytearray(2 * 1024**3); print('allocated')"])
    assert hog["exit_code"] != 0 and "allocated" not in hog["stdout"]


def test_redirects_are_not_followed(counter: tuple[str, list[str]]) -> None:
    url, hits = counter
    tool = container_tool(url)
    result = tool.execute({"op": "fetch", "path": "/go", "method": "POST", "body": {"command": "id"}}, CTX)
    assert result["status"] == 307
    assert hits == ["/go"]  # never /exec


def test_a_fetch_path_is_always_a_path_on_the_sandbox(counter: tuple[str, list[str]]) -> None:
    url, hits = counter
    tool = container_tool(url)
    for path in ("//evil.example/x", "http://evil.example/x", "x", "/a\\b", "/a%00b"):
        with pytest.raises(ToolError):
            tool.execute({"op": "fetch", "path": path}, CTX)
    assert hits == []
    assert tool.execute({"op": "fetch", "path": "/a/./b/../c"}, CTX)["path"] == "/a/c"
    assert hits == ["/a/c"]
