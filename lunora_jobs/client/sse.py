"""A Server-Sent Events parser (the WHATWG event-stream rules the client needs), fed line by line."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: ``event`` (default ``message``), ``data`` (lines joined by ``\\n``), ``id``."""

    event: str
    data: str
    id: str | None


class SseParser:
    """Feed decoded lines (without their line break); ``feed`` returns an event when one completes.

    ``last_event_id`` follows the spec: it persists across events and is updated by any ``id:`` field,
    and ``retry_ms`` by a ``retry:`` field.
    """

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._has_id = False
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None

    def feed(self, line: str) -> SseEvent | None:
        """Process one line; a blank line dispatches the pending event (if it has data)."""
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment (heartbeat)
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\x00" not in value:
            self._id, self._has_id = value, True
            self.last_event_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> SseEvent | None:
        event, data = self._event or "message", self._data
        event_id = self._id if self._has_id else None
        self._event, self._data, self._id, self._has_id = "", [], None, False
        if not data:
            return None
        return SseEvent(event=event, data="\n".join(data), id=event_id)
