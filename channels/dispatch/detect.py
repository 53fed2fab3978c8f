"""Which platform a request claims to come from (by its signature headers), and how to check it."""

from __future__ import annotations

from collections.abc import Callable

from starlette.datastructures import Headers

from channels.inbound import Channel, Handshake, InboundEvent, parse_discord, parse_github, parse_slack
from channels.verify import verify_discord, verify_github, verify_slack

Verifier = Callable[[Headers, bytes, str], bool]
Parser = Callable[[Headers, bytes], InboundEvent | Handshake | None]

_MARKERS: tuple[tuple[Channel, tuple[str, ...]], ...] = (
    ("slack", ("x-slack-signature", "x-slack-request-timestamp")),
    ("discord", ("x-signature-ed25519", "x-signature-timestamp")),
    ("github", ("x-hub-signature-256", "x-github-event", "x-github-delivery")),
)


def detect_channel(headers: Headers) -> Channel | None:
    """The channel whose signature headers the request carries (None: no known signature at all)."""
    for channel, names in _MARKERS:
        if any(name in headers for name in names):
            return channel
    return None


def verifier(channel: Channel, *, now: Callable[[], float]) -> Verifier:
    """The signature check for ``channel`` (timestamped channels read the clock ``now``)."""
    if channel == "slack":
        return lambda headers, body, secret: verify_slack(headers, body, secret, now=now())
    if channel == "discord":
        return lambda headers, body, secret: verify_discord(headers, body, secret, now=now())
    return verify_github


PARSERS: dict[Channel, Parser] = {"slack": parse_slack, "github": parse_github, "discord": parse_discord}
