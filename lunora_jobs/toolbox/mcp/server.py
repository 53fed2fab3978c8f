"""``McpServer``: where an MCP server is (a command to start over stdio, or a streamable-HTTP URL)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from lunora_jobs.errors import ConfigurationError


@dataclass(frozen=True)
class McpServer:
    """An MCP server to adapt tools from. Build it with ``McpServer.stdio`` or ``McpServer.http``.

    It is configuration only: each process opens its own session on first use (a Celery worker's
    forked children never share their parent's pipe or HTTP session).
    """

    transport: Literal["stdio", "http"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] | None = None
    """Extra environment of a stdio server's process, as ``(name, value)`` pairs (hashable)."""
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    """HTTP headers sent with every request (e.g. ``Authorization``), as ``(name, value)`` pairs."""
    timeout_s: float = 60.0
    """How long one request (list or call) may take before it fails (and the step is retried)."""

    @classmethod
    def stdio(
        cls, command: str, args: Sequence[str] = (), *, env: Mapping[str, str] | None = None,
        cwd: str | None = None, timeout_s: float = 60.0,
    ) -> McpServer:
        """A server this process starts as ``command args...`` and talks to over its stdin/stdout."""
        if not isinstance(command, str) or not command:
            raise ConfigurationError(
                "McpServer.stdio needs a command to run, e.g. McpServer.stdio('npx', [...])."
            )
        if isinstance(args, str):
            raise ConfigurationError(
                f"McpServer.stdio({command!r}): args must be a list of strings, not a str."
            )
        pairs = tuple(sorted(env.items())) if env else None
        return cls("stdio", command=command, args=tuple(args), env=pairs, cwd=cwd,
                   timeout_s=_positive(timeout_s))

    @classmethod
    def http(
        cls, url: str, *, headers: Mapping[str, str] | None = None, timeout_s: float = 60.0,
    ) -> McpServer:
        """A server reached over streamable HTTP at ``url`` (e.g. ``http://127.0.0.1:8000/mcp``)."""
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(
                f"McpServer.http: {url!r} is not an http(s) URL; pass the server's endpoint, "
                "e.g. 'http://127.0.0.1:8000/mcp'."
            )
        pairs = tuple(sorted((headers or {}).items()))
        return cls("http", url=url, headers=pairs, timeout_s=_positive(timeout_s))

    def describe(self) -> str:
        """How error messages name this server (a URL's credentials left out)."""
        if self.transport == "stdio":
            return "stdio server `" + " ".join([self.command, *self.args]) + "`"
        parts = urlsplit(self.url)
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        return f"HTTP server {parts.scheme}://{netloc}{parts.path}"


def _positive(timeout_s: float) -> float:
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s <= 0:
        raise ConfigurationError(
            f"McpServer: timeout_s must be a positive number of seconds, got {timeout_s!r}."
        )
    return float(timeout_s)
