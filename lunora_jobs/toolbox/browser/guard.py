"""The SSRF guard of ``browser_tool``: may a URL be fetched, and at which address.

``check_url`` parses the host the way a browser does (WHATWG URL: ``2130706433``, ``0x7f000001``,
``0177.0.0.1`` and ``127.1`` are all 127.0.0.1), resolves a name, and refuses when any address it
resolves to is not globally routable: loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7),
link-local (169.254/16, the cloud metadata address, fe80::/10), multicast, reserved, unspecified
(``0.0.0.0``, ``::``), shared (100.64/10), documentation ranges, and IPv6 forms that embed an IPv4
address (``::ffff:127.0.0.1``, NAT64, 6to4, Teredo). The decision carries the address it checked:
the browser's interception layer connects to that very address, so a name that resolves elsewhere
the second time (DNS rebinding) cannot switch the target after the check.

An allowlist admits chosen ``host`` or ``host:port`` entries (e.g. a staging server on a private
address); everything else must be public.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Sequence[str]]


@dataclass(frozen=True)
class Decision:
    """The guard's answer: ``allowed``, why not (``reason``), and where to connect (``address``)."""

    allowed: bool
    reason: str = ""
    host: str = ""
    port: int = 0
    address: str = ""


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (the operating system's resolver)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_url(url: str, *, allow: Iterable[str] = (), resolver: Resolver = system_resolver) -> Decision:
    """Whether ``url`` may be fetched; the address to connect to when it may."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return Decision(False, f"not a valid URL: {exc}")
    if parts.scheme not in ("http", "https"):
        return Decision(False, f"only http and https URLs are fetched, not {parts.scheme or 'none'!r}")
    raw = parts.hostname or ""
    if not raw:
        return Decision(False, "the URL has no host")
    port = port or (443 if parts.scheme == "https" else 80)
    literal = parse_host(raw)
    host = str(literal) if literal is not None else raw.rstrip(".").lower()
    allowed = {entry.lower() for entry in allow}
    admitted = host in allowed or f"{host}:{port}" in allowed or raw.lower() in allowed
    if literal is not None:
        addresses: list[Address] = [literal]
    else:
        try:
            addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in resolver(host, port)]
        except (OSError, ValueError) as exc:
            return Decision(False, f"the host {host!r} does not resolve: {exc}", host, port)
        if not addresses:
            return Decision(False, f"the host {host!r} does not resolve", host, port)
    if not admitted:
        for address in addresses:
            problem = refusal(address)
            if problem:
                where = f"{raw} is {address}" if literal is not None else f"{host} resolves to {address}"
                return Decision(False, f"{where}, {problem}", host, port)
    return Decision(True, "", host, port, str(addresses[0]))


def refusal(address: Address) -> str:
    """Why ``address`` may not be fetched, or ``""`` when it is a public address."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if embedded is not None or address in ipaddress.ip_network("64:ff9b::/96"):
            return "an IPv6 address that embeds an IPv4 one"
    for test, label in (
        ("is_loopback", "a loopback address"), ("is_unspecified", "the unspecified address"),
        ("is_link_local", "a link-local address"), ("is_multicast", "a multicast address"),
        ("is_private", "a private address"), ("is_reserved", "a reserved address"),
    ):
        if getattr(address, test):
            return label
    if not address.is_global:
        return "not a public address"
    return ""


def parse_host(host: str) -> Address | None:
    """``host`` as an IP address when it is one in any form a browser accepts, else ``None``."""
    text = host.strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        pass
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(parts):
        return None
    numbers = [_number(p) for p in parts]
    if any(n is None for n in numbers):
        return None  # a name (a part is not a number), resolved by DNS
    values = [n for n in numbers if n is not None]
    if any(v > 255 for v in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        return None  # out of range: browsers refuse such a URL outright
    value = values[-1]
    for index, part in enumerate(values[:-1]):
        value += part << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _number(part: str) -> int | None:
    try:
        if part.lower().startswith("0x"):
            return int(part[2:] or "0", 16)
        if len(part) > 1 and part.startswith("0"):
            return int(part[1:], 8)
        return int(part, 10)
    except ValueError:
        return None
