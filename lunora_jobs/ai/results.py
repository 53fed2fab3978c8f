"""What the model helpers return: text, steps, objects and embeddings, each with usage and finish reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from lunora_jobs.models.base import ToolCall, Usage

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One executed tool call: the call, what the tool returned (or the error text the model was shown)."""

    call: ToolCall
    output: Any
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class StepResult:
    """One model call of a ``generate_text`` / ``stream_text`` loop and the tools it ran."""

    text: str | None
    tool_calls: list[ToolCall]
    tool_results: list[ToolResult]
    usage: Usage
    finish_reason: str
    model: str | None


@dataclass(frozen=True, slots=True)
class TextResult:
    """The outcome of ``generate_text`` (or a finished ``stream_text``).

    ``text``, ``tool_calls``, ``tool_results`` and ``finish_reason`` are the last step's; ``usage`` sums
    every step; ``messages`` are the assistant and tool messages the call added (append them to your
    history to continue the conversation).
    """

    text: str
    finish_reason: str
    usage: Usage
    steps: list[StepResult]
    messages: list[dict[str, Any]]
    model: str | None

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls of the last step."""
        return self.steps[-1].tool_calls if self.steps else []

    @property
    def tool_results(self) -> list[ToolResult]:
        """The tool results of the last step."""
        return self.steps[-1].tool_results if self.steps else []


@dataclass(frozen=True, slots=True)
class ObjectResult(Generic[T]):
    """The outcome of ``generate_object`` / a finished ``stream_object``.

    ``object`` is a validated instance of the pydantic model (or a dict that matches the JSON schema);
    ``repairs`` counts the extra calls it took; ``usage`` sums all of them.
    """

    object: T
    text: str
    finish_reason: str
    usage: Usage
    model: str | None
    repairs: int = 0


@dataclass(frozen=True, slots=True)
class EmbedResult:
    """One embedding and the usage of producing it."""

    embedding: list[float]
    usage: Usage
    model: str | None
    value: str = ""


@dataclass(frozen=True, slots=True)
class EmbedManyResult:
    """Embeddings lined up with the input values, and the usage of producing them."""

    embeddings: list[list[float]]
    usage: Usage
    model: str | None
    values: list[str] = field(default_factory=list)
