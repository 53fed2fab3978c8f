"""``container_tool``: ``fetch`` (HTTP to a sandbox service) and ``exec`` (a command run there).

It speaks the sandbox protocol of ``reference_server.py`` (``POST /exec``; every other route is the
sandbox app's own). ``exec`` needs a human approval by default, and so does any ``fetch`` whose path
resolves to the exec route: the path is normalized the way a server would read it (percent-escapes
decoded, ``.``/``..`` segments and repeated slashes collapsed) and the normalized path is what is
sent, so the gate checks exactly the request that goes out. Redirects are never followed (a redirect
to ``/exec`` would otherwise run a command unattended); a path is always a path on the sandbox, never
another host.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from lunora_jobs.errors import InvalidToolError, ToolError
from lunora_jobs.toolbox._schema import op_schema
from lunora_jobs.toolbox.sandbox.reference_server import EXEC_ROUTE
from lunora_jobs.tools import NeedsApproval, ToolContext, ToolDefinition, define_tool

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")


def normalize_path(path: str) -> str:
    """The route a server reads from ``path`` (query kept apart); ``ToolError`` if it is not a path."""
    if not isinstance(path, str) or not path.startswith("/") or path.startswith("//"):
        raise ToolError(f"fetch needs a path on the sandbox starting with one '/', got {path!r}")
    route, _, query = path.partition("?")
    route = route.split("#", 1)[0]
    decoded = unquote(route)
    if any(c in decoded for c in "\x00\r\n\\"):
        raise ToolError(f"the path {path!r} contains a NUL, a line break or a backslash")
    normal = posixpath.normpath("/" + decoded.lstrip("/"))
    normal = "/" + normal.lstrip("/")  # normpath keeps a leading '//' (POSIX); a route has one
    return quote(normal, safe="/-._~!$&'()*+,;=:@") + (f"?{query}" if query else "")


def reaches_exec(path: str) -> bool:
    """Whether a fetch of ``path`` lands on the exec route (any case: some servers fold it)."""
    try:
        route = normalize_path(path).split("?", 1)[0]
    except ToolError:
        return False  # refused anyway when it runs
    route = unquote(route).rstrip("/").lower()
    return route == EXEC_ROUTE or route.startswith(EXEC_ROUTE + "/")


def _gate(input: Mapping[str, Any]) -> bool:
    return input.get("op") == "exec" or reaches_exec(str(input.get("path", "")))


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx is returned to the caller as it is


def container_tool(
    base_url: str,
    *,
    name: str = "sandbox",
    needs_approval: NeedsApproval = _gate,
    timeout_s: float = 60.0,
    headers: Mapping[str, str] | None = None,
    max_response_bytes: int = 1_000_000,
) -> ToolDefinition:
    """A tool for the sandbox service at ``base_url`` (e.g. the reference server's printed URL).

    Example::

        sandbox = container_tool("http://127.0.0.1:8700")
        coder = define_agent(name="coder", tools=[sandbox])   # exec waits for a human by default
    """
    parts = urlsplit(base_url) if isinstance(base_url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidToolError(f"container_tool: {base_url!r} is not an http(s) URL of a sandbox service.")
    base = base_url.rstrip("/")
    opener = urllib.request.build_opener(_NoRedirects)
    sent_headers = {"Content-Type": "application/json", **dict(headers or {})}

    def call(method: str, path: str, body: bytes | None) -> tuple[int, str, str]:
        request = urllib.request.Request(base + path, data=body, method=method, headers=sent_headers)
        try:
            with opener.open(request, timeout=timeout_s) as response:
                status, kind, raw = response.status, response.headers.get("Content-Type", ""), response
                data = raw.read(max_response_bytes + 1)
        except urllib.error.HTTPError as exc:
            status, kind = exc.code, exc.headers.get("Content-Type", "")
            data = exc.read(max_response_bytes + 1)
        except (urllib.error.URLError, OSError) as exc:
            raise ConnectionError(f"the sandbox at {base} did not answer: {exc}") from exc
        if len(data) > max_response_bytes:
            data = data[:max_response_bytes]
        return status, kind, data.decode("utf-8", errors="replace")

    def execute(input: dict[str, Any], ctx: ToolContext) -> Any:
        if input["op"] == "exec":
            command = input.get("command")
            if not command:
                raise ToolError("exec needs a command (a string, or a list of arguments)")
            payload = {"command": command}
            if "timeout_s" in input:
                payload["timeout_s"] = input["timeout_s"]
            status, _, text = call("POST", EXEC_ROUTE, json.dumps(payload).encode())
            if status != 200:
                raise ToolError(f"the sandbox refused the command (HTTP {status}): {text[:500]}")
            return json.loads(text)
        method = str(input.get("method") or "GET").upper()
        if method not in METHODS:
            raise ToolError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        path = normalize_path(str(input.get("path", "")))
        body = input.get("body")
        data = None if body is None else (body if isinstance(body, str) else json.dumps(body)).encode()
        status, kind, text = call(method, path, data)
        result: dict[str, Any] = {"status": status, "path": path, "body": text}
        if "json" in kind:
            with contextlib.suppress(ValueError):  # a body that says JSON but is not stays text
                result["body"] = json.loads(text)
        return result

    schema = op_schema({
        "op": {"type": "string", "enum": ["fetch", "exec"]},
        "path": {"type": "string", "description": "fetch: the route on the sandbox, e.g. /files/out.txt"},
        "method": {"type": "string",
                   "description": "fetch: GET (default), POST, PUT, PATCH, DELETE, HEAD"},
        "body": {"description": "fetch: a string or JSON value to send"},
        "command": {"description": "exec: a shell command string, or a list of arguments",
                    "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "timeout_s": {"type": "number", "exclusiveMinimum": 0},
    })
    return define_tool(
        name,
        description=("A sandbox machine: op exec runs a command in its workspace (no network); op fetch "
                     "sends an HTTP request to a route of the sandbox's app."),
        input_schema=schema, execute=execute, needs_approval=needs_approval,
    )
