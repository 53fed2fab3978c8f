"""Size limits of inbound mail, checked before anything is offered to an agent."""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class EmailLimits:
    """``max_message_bytes`` bounds the raw message (SMTP ``SIZE`` and DATA, the HTTP body);
    ``max_attachments`` and ``max_decoded_bytes`` (every MIME part decoded, summed) bound what
    parsing may produce; ``max_parts`` bounds MIME nesting work."""

    max_message_bytes: int = 10 * MiB
    max_attachments: int = 20
    max_decoded_bytes: int = 25 * MiB
    max_parts: int = 500
