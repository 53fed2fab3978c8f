"""An asyncio server (SMTP, or anything with a protocol factory) on a free loopback port, served by
an event loop in a thread of its own — aiosmtpd's ``Controller`` cannot bind port 0."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aiosmtpd.smtp import SMTP


@contextmanager
def serving(start: Callable[[], Awaitable[asyncio.Server]]) -> Iterator[int]:
    """Run ``await start()`` in a fresh loop thread; yield the bound port; close it afterwards."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def serve() -> None:
        asyncio.set_event_loop(loop)
        try:
            holder["server"] = loop.run_until_complete(start())
        finally:
            ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10) and "server" in holder, "the server did not start"
    try:
        yield holder["server"].sockets[0].getsockname()[1]
    finally:
        loop.call_soon_threadsafe(holder["server"].close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


class SmtpSink:
    """An SMTP server that keeps every message it receives (a stand-in for a mail relay)."""

    def __init__(self) -> None:
        self.messages: list[bytes] = []

    async def handle_DATA(self, server: SMTP, session: Any, envelope: Any) -> str:
        self.messages.append(envelope.original_content)
        return "250 OK"

    @contextmanager
    def running(self) -> Iterator[int]:
        """Serve on a free port for the block; yields the port."""

        async def start() -> asyncio.Server:
            return await asyncio.get_running_loop().create_server(lambda: SMTP(self), "127.0.0.1", 0)

        with serving(start) as port:
            yield port
