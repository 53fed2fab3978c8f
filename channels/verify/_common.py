"""What the three verifiers share: case-insensitive header lookup and strict format checks.

Every check here answers ``False``/``None`` instead of raising: a verifier sees attacker-controlled
input (Discord probes endpoints with bad signatures on purpose), and a refusal must never become an
exception or a 5xx.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

Headers = Mapping[str, str] | Iterable[tuple[str, str]]
"""Request headers: a mapping (any case) or ``(name, value)`` pairs."""

DEFAULT_TOLERANCE_S = 300
"""How far a signed timestamp may be from our clock, either way (replay guard)."""

_DIGITS = re.compile(r"[0-9]{1,12}")
_HEX = re.compile(r"[0-9a-fA-F]*")


def header(headers: Headers, name: str) -> str | None:
    """The value of header ``name`` (case-insensitive), or None. A repeated header is a refusal:
    two signatures for one request are never legitimate, and picking one would be a guess."""
    wanted = name.lower()
    items = headers.items() if isinstance(headers, Mapping) else headers
    found: str | None = None
    for key, value in items:
        if str(key).lower() == wanted:
            if found is not None:
                return None
            found = value if isinstance(value, str) else None
            if found is None:
                return None
    return found


def parse_timestamp(value: str | None) -> int | None:
    """Unix seconds from a header: ASCII digits only (``int()`` alone would accept ``" 1_0"``)."""
    if value is None or not _DIGITS.fullmatch(value):
        return None
    return int(value)


def fresh(timestamp: int, now: float, tolerance_s: float) -> bool:
    """Whether ``timestamp`` is within ``tolerance_s`` of ``now``, in the past or the future."""
    return abs(now - timestamp) <= tolerance_s


def hex_bytes(value: str | None, length: int) -> bytes | None:
    """``length`` bytes from exactly ``2 * length`` hex digits, else None (odd length, non-hex)."""
    if value is None or len(value) != 2 * length or not _HEX.fullmatch(value):
        return None
    return bytes.fromhex(value)
