"""The model seam: one turn in, one turn out.

A ``Model`` takes the prompt messages (OpenAI chat shape: ``{"role", "content", "tool_calls"?,
"tool_call_id"?}``), the tools the model may call, a tool choice and an optional JSON schema for a
structured answer, and returns a ``ModelTurn``. Everything the durable loop memoizes about a turn
is in ``ModelTurn.to_json()``, so a replay rebuilds the identical turn from the ledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error", "other"]
ToolChoice = Literal["auto", "none", "required"] | dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model sees of a tool: its name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model made. ``id`` is the provider's id and names the durable step."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str | None = None
    """The provider's unparsed argument text when it was not valid JSON (for ``repair_tool_call``)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict (for the ledger)."""
        return {
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "raw_arguments": self.raw_arguments,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolCall:
        """Inverse of ``to_json``."""
        return cls(
            id=data["id"],
            name=data["name"],
            arguments=data.get("arguments") or {},
            raw_arguments=data.get("raw_arguments"),
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one or more turns. Cache tokens are subsets of input tokens."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    """A provider-reported cost; it always wins over an estimate."""

    @property
    def total_tokens(self) -> int:
        """Input + output."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            cost,
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cost_usd": self.cost_usd,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Usage:
        """Inverse of ``to_json`` (None gives zero usage)."""
        if not data:
            return cls()
        return cls(
            int(data.get("input_tokens", 0)),
            int(data.get("output_tokens", 0)),
            int(data.get("cache_read_tokens", 0)),
            int(data.get("cache_write_tokens", 0)),
            data.get("cost_usd"),
        )


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One model response."""

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    model: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict (what the ledger stores for ``llm:turn:<n>``)."""
        return {
            "text": self.text,
            "tool_calls": [c.to_json() for c in self.tool_calls],
            "usage": self.usage.to_json(),
            "finish_reason": self.finish_reason,
            "model": self.model,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelTurn:
        """Inverse of ``to_json``."""
        return cls(
            text=data.get("text"),
            tool_calls=[ToolCall.from_json(c) for c in data.get("tool_calls") or []],
            usage=Usage.from_json(data.get("usage")),
            finish_reason=data.get("finish_reason") or "stop",
            model=data.get("model"),
        )


@runtime_checkable
class Model(Protocol):
    """Anything that can take one turn. ``name`` labels usage rows and spans."""

    name: str

    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        """Run one turn."""
        ...
