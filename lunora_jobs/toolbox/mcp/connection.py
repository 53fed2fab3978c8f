"""A synchronous handle on one MCP session: the SDK is async, the engine's tool steps are not.

The session lives on a private event loop in a daemon thread. One long-lived task opens the SDK's
``Client`` and keeps it open (anyio requires a context to be left by the task that entered it);
requests are submitted to the loop from any thread and wait with the server's ``timeout_s``. A
broken session is dropped and the next request opens a new one, so a restarted server heals.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from lunora_jobs.errors import McpConnectionError, McpUnavailableError
from lunora_jobs.toolbox.mcp.server import McpServer

T = TypeVar("T")

# The SDK's codes for a session that ended or a request that timed out (mcp_types.jsonrpc): the
# connection failed, not the request, so the step is retried on a new session.
_CONNECTION_CODES = frozenset({-32000, -32001})


def _sdk() -> Any:
    try:
        import mcp
    except ImportError:
        raise McpUnavailableError(
            "MCP tools need the official MCP SDK: pip install 'lunora-jobs[mcp]'."
        ) from None
    return mcp


class McpConnection:
    """One process's session with one server; ``request`` runs an SDK call on it."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._closed: Future[None] | None = None

    def request(self, call: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``call(client)`` on the open session (opening it first); raise ``McpConnectionError``
        when the server cannot be reached, and let the SDK's ``MCPError`` (a server's refusal) through."""
        mcp = _sdk()
        client, loop = self._open(mcp)
        future = asyncio.run_coroutine_threadsafe(_awaited(call(client)), loop)
        try:
            return future.result(timeout=self.server.timeout_s)
        except FutureTimeout:
            future.cancel()
            self.close()  # a session that stopped answering is not reused
            raise McpConnectionError(
                f"The MCP {self.server.describe()} did not answer within {self.server.timeout_s:g} s; "
                "check that it is healthy, or raise McpServer(timeout_s=...)."
            ) from None
        except mcp.MCPError as exc:
            if exc.code not in _CONNECTION_CODES:
                raise  # the server's answer to this request: the caller words it for the model
            self.close()
            raise McpConnectionError(
                f"The MCP {self.server.describe()} broke off: {exc}. The step is retried on a new session."
            ) from exc
        except (OSError, EOFError, ConnectionError, RuntimeError, _broken_errors()) as exc:
            self.close()
            raise McpConnectionError(
                f"The MCP {self.server.describe()} broke off: {type(exc).__name__}: {exc}. "
                "The step is retried on a new session."
            ) from exc

    def _open(self, mcp: Any) -> tuple[Any, asyncio.AbstractEventLoop]:
        with self._lock:
            if self._client is not None and self._loop is not None:
                return self._client, self._loop
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="lunora-mcp", daemon=True).start()
            opened: Future[Any] = Future()
            closed: Future[None] = Future()
            asyncio.run_coroutine_threadsafe(self._hold(mcp, opened, closed), loop)
            try:
                client = opened.result(timeout=self.server.timeout_s)
            except BaseException as exc:
                loop.call_soon_threadsafe(loop.stop)
                raise McpConnectionError(
                    f"Could not connect to the MCP {self.server.describe()}: "
                    f"{type(exc).__name__}: {_leaf(exc)}. Check the command or URL, and that the server "
                    "starts on its own (run it by hand)."
                ) from exc
            self._loop, self._client, self._closed = loop, client, closed
            return client, loop

    async def _hold(self, mcp: Any, opened: Future[Any], closed: Future[None]) -> None:
        """The task that owns the session: open it, hand it out, keep it until ``close``."""
        self._stop = asyncio.Event()
        try:
            async with mcp.Client(_target(mcp, self.server), mode="legacy",
                                  read_timeout_seconds=self.server.timeout_s) as client:
                opened.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            self._client = None  # a session that died on its own is reopened on the next request
        finally:
            if not closed.done():
                closed.set_result(None)

    def close(self) -> None:
        """End the session (a stdio server's process exits with it)."""
        with self._lock:
            loop, stop, closed = self._loop, self._stop, self._closed
            self._loop = self._client = self._stop = self._closed = None
        if loop is None:
            return
        if stop is not None:
            loop.call_soon_threadsafe(stop.set)
        if closed is not None:
            with contextlib.suppress(FutureTimeout):
                closed.result(timeout=5)  # a stdio server gets its stdin closed before the loop stops
        loop.call_soon_threadsafe(loop.stop)


def _target(mcp: Any, server: McpServer) -> Any:
    if server.transport == "stdio":
        params = mcp.StdioServerParameters(
            command=server.command, args=list(server.args), env=dict(server.env) if server.env else None,
            cwd=server.cwd,
        )
        return mcp.stdio_client(params, errlog=_errlog())
    if not server.headers:
        return server.url
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers=dict(server.headers), timeout=server.timeout_s)
    return streamable_http_client(server.url, http_client=http)


def _errlog() -> Any:
    """Where a stdio server's stderr goes: this process's stderr when it is a real file. A Celery
    worker replaces ``sys.stderr`` with a logging proxy that has no file descriptor to hand down."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return open(os.devnull, "w")  # kept open: every server of the process writes there


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _broken_errors() -> type[BaseException]:
    try:
        import anyio
    except ImportError:  # pragma: no cover - anyio comes with the SDK
        return ConnectionError
    return anyio.BrokenResourceError


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (anyio wraps a failed connect in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


_CONNECTIONS: dict[tuple[int, McpServer], McpConnection] = {}
_REGISTRY_LOCK = threading.Lock()


def connection_for(server: McpServer) -> McpConnection:
    """This process's connection to ``server`` (a forked child opens its own)."""
    key = (os.getpid(), server)
    with _REGISTRY_LOCK:
        conn = _CONNECTIONS.get(key)
        if conn is None:
            conn = _CONNECTIONS[key] = McpConnection(server)
        return conn


@atexit.register
def _close_all() -> None:
    for (pid, _), conn in list(_CONNECTIONS.items()):
        if pid == os.getpid():
            conn.close()


__all__ = ["McpConnection", "connection_for"]
