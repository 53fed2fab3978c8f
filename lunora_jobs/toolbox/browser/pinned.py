"""One HTTP request to the address the guard checked (never a second DNS lookup), for the browser's
interception layer. Redirects are returned, not followed: the browser follows them, and its next
request passes the guard again."""

from __future__ import annotations

import http.client
import socket
import ssl
from dataclasses import dataclass


@dataclass(frozen=True)
class Response:
    """What the target answered (the body capped)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to a fixed address, with the certificate checked for the URL's host name."""

    def __init__(self, address: str, port: int, server_name: str, timeout: float) -> None:
        super().__init__(address, port, timeout=timeout, context=ssl.create_default_context())
        self._server_name = server_name

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self._server_name)  # type: ignore[attr-defined]


# Headers a browser sets that must not be forwarded as they are (the connection is ours).
_HOP = {"host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"}


def fetch_pinned(
    method: str, scheme: str, host: str, port: int, address: str, target: str,
    headers: dict[str, str], body: bytes | None, *, timeout: float, max_bytes: int,
) -> Response:
    """Send ``method target`` to ``address:port`` with ``Host: host``."""
    conn: http.client.HTTPConnection
    if scheme == "https":
        conn = _PinnedHTTPS(address, port, host, timeout)
    else:
        conn = http.client.HTTPConnection(address, port, timeout=timeout)
    try:
        sent = {k: v for k, v in headers.items() if k.lower() not in _HOP}
        default_port = 443 if scheme == "https" else 80
        sent["Host"] = host if port == default_port else f"{host}:{port}"
        sent["Accept-Encoding"] = "identity"  # the body is handed to the browser as it is
        conn.request(method, target, body=body, headers=sent)
        response = conn.getresponse()
        data = response.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ValueError(f"the response of {host} is over {max_bytes} bytes")
        kept = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP | {"content-length"}]
        return Response(response.status, kept, data)
    finally:
        conn.close()
