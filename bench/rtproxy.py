"""Count network round trips exactly: a TCP relay that sees every byte between a client and a server.

A round trip is a burst of client→server bytes answered by server→client bytes; pipelined requests
sent before any answer arrives merge into one burst, the way the network sees them. Counting on the
wire is independent of the driver (psycopg's BEGIN/ROLLBACK, pool pings, pipelines, redis-py
pipelines, kombu publishes all show up as what they cost), so the numbers cannot flatter the code.

Example::

    proxy = RoundTripProxy("127.0.0.1", 5432).start()
    url = f"postgresql+psycopg://postgres@127.0.0.1:{proxy.port}/app"
    before = proxy.requests
    ...  # use url
    print(proxy.requests - before, "round trips")
    proxy.stop()

With ``postgres=True`` it also reads the PostgreSQL frontend protocol on the client side and counts
statements (``statements``): each simple ``Query`` and each extended-protocol ``Execute``, whatever
the driver (psycopg's pipeline mode and its raw-connection calls included, which SQLAlchemy's events
do not see).

The relay adds latency, so time things without it; use it for counts only.
"""

from __future__ import annotations

import selectors
import socket
import struct
import threading
from dataclasses import dataclass, field

_PRE_STARTUP = {80877102, 80877103, 80877104}  # CancelRequest, SSLRequest, GSSENCRequest codes
_STATEMENT_MESSAGES = {ord("Q"), ord("E")}  # Query (simple protocol), Execute (extended protocol)


@dataclass
class _PgFrontend:
    """Splits the client's byte stream into PostgreSQL frontend messages and counts the statements."""

    started: bool = False
    buffer: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> int:
        """Statements completed by ``data``."""
        self.buffer += data
        statements = 0
        while len(self.buffer) >= 8:
            if not self.started:  # untyped: SSL/GSS requests, then the startup packet
                length, code = struct.unpack("!ii", self.buffer[:8])
                typed = False
            else:
                length, typed = struct.unpack("!i", self.buffer[1:5])[0] + 1, True  # + the type byte
            if len(self.buffer) < length:
                break
            if typed:
                statements += self.buffer[0] in _STATEMENT_MESSAGES
            else:
                self.started = code not in _PRE_STARTUP
            del self.buffer[:length]
        return statements


@dataclass
class _Pair:
    client: socket.socket
    server: socket.socket
    last_from_client: bool = False
    frontend: _PgFrontend | None = None


class RoundTripProxy:
    """A one-thread TCP relay to ``host:port`` that counts request bursts (see the module doc)."""

    def __init__(self, host: str, port: int, *, postgres: bool = False) -> None:
        self.upstream = (host, port)
        self.postgres = postgres
        self.requests = 0
        self.statements = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name=f"rtproxy:{port}", daemon=True)

    def start(self) -> RoundTripProxy:
        """Start relaying in a daemon thread; returns self."""
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the relay and close every relayed connection."""
        self._stopping = True
        self._thread.join(timeout=5)
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()

    def count(self) -> int:
        """Request bursts so far (thread-safe read)."""
        with self._lock:
            return self.requests

    def count_statements(self) -> int:
        """PostgreSQL statements so far (``postgres=True``; thread-safe read)."""
        with self._lock:
            return self.statements

    def _accept(self) -> None:
        client, _ = self._listener.accept()
        server = socket.create_connection(self.upstream)
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = _Pair(client, server, frontend=_PgFrontend() if self.postgres else None)
        self._selector.register(client, selectors.EVENT_READ, pair)
        self._selector.register(server, selectors.EVENT_READ, pair)

    def _loop(self) -> None:
        while not self._stopping:
            for key, _ in self._selector.select(timeout=0.05):
                if key.data is None:
                    self._accept()
                    continue
                pair: _Pair = key.data
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                self._relay(pair, sock)

    def _relay(self, pair: _Pair, sock: socket.socket) -> None:
        try:
            data = sock.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self._close(pair)
            return
        from_client = sock is pair.client
        statements = pair.frontend.feed(data) if from_client and pair.frontend is not None else 0
        burst = from_client and not pair.last_from_client
        if burst or statements:
            with self._lock:
                self.requests += burst
                self.statements += statements
        pair.last_from_client = from_client
        try:
            (pair.server if from_client else pair.client).sendall(data)
        except OSError:  # the other side went away mid-relay: drop the pair like a closed one
            self._close(pair)

    def _close(self, pair: _Pair) -> None:
        for s in (pair.client, pair.server):
            if s.fileno() >= 0:
                self._selector.unregister(s)
                s.close()
