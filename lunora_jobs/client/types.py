"""What the client hands back: small typed views of the API's JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

TERMINAL = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True, slots=True)
class Run:
    """A run (a start answer carries ``id``, ``thread_key`` and ``status`` only)."""

    id: str
    thread_key: str
    status: str
    agent: str | None = None
    stopped: str | None = None
    turns: int = 0
    text: str | None = None
    output: Any = None
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        """True once the run can no longer change."""
        return self.status in TERMINAL

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Run:
        """From a ``RunOut`` / ``RunAccepted`` body."""
        return cls(id=data["id"], thread_key=data.get("thread_key", ""), status=data["status"],
                   agent=data.get("agent"), stopped=data.get("stopped"), turns=data.get("turns", 0),
                   text=data.get("text"), output=data.get("output"), error=data.get("error"),
                   usage=dict(data.get("usage") or {}))


@dataclass(frozen=True, slots=True)
class Message:
    """A persisted message of a thread."""

    seq: int
    role: str
    content: str | None
    run_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        """From a ``MessageOut`` body."""
        return cls(seq=int(data["seq"]), role=str(data["role"]), content=data.get("content"),
                   run_id=data.get("run_id"), tool_calls=data.get("tool_calls"),
                   tool_call_id=data.get("tool_call_id"), name=data.get("name"),
                   metadata=data.get("metadata"), created_at=int(data.get("created_at") or 0))


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A tool call waiting for a decision."""

    run_id: str
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One event of a thread stream: ``type`` is ``message`` (``id`` = seq), ``snapshot``, ``status``,
    ``approvals``, ``state`` or ``delta``; ``data`` the decoded JSON."""

    type: str
    data: Any
    id: int | None = None

    @property
    def message(self) -> Message | None:
        """The message of a ``message`` event."""
        return Message.from_json(self.data) if self.type == "message" else None

    @classmethod
    def from_wire(cls, event: str, data: str, event_id: str | None) -> StreamEvent:
        """From an SSE event (or a WebSocket frame's fields)."""
        return cls(type=event, data=json.loads(data) if data else None,
                   id=int(event_id) if event_id and event_id.isdigit() else None)
