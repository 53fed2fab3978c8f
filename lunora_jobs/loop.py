"""Loop-control types: stop conditions, ``prepare_step``, ``repair_tool_call`` and ``on_step_finish``.

Everything here is evaluated inside the durable loop and re-evaluated on replay, so the callables a
user hands in must be deterministic (no clock, no randomness).

Example::

    from lunora_jobs import define_agent, has_tool_call
    from lunora_jobs.loop import PrepareStepResult

    agent = define_agent(
        name="support", instructions="...", model="offline",
        stop_when=has_tool_call("finalize"),
        prepare_step=lambda a: PrepareStepResult(tool_choice="required") if a.step_number == 0 else None,
    )
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from lunora_jobs.errors import InvalidAgentOptionError
from lunora_jobs.models.base import Model, ModelTurn, ToolCall, ToolChoice
from lunora_jobs.models.output import OutputSpec

__all__ = [
    "CompactionOptions",
    "OutputSpec",
    "PrepareStep",
    "PrepareStepArgs",
    "PrepareStepResult",
    "RepairArgs",
    "RepairToolCall",
    "StepFinish",
    "StopCondition",
    "StopContext",
    "has_tool_call",
    "step_count_is",
]


@dataclass(frozen=True, slots=True)
class StopContext:
    """What a stop condition sees after a turn: every turn of this run so far, oldest first."""

    turns: list[ModelTurn]
    step_number: int
    """The index of the turn that just finished (0-based)."""


StopCondition = Callable[[StopContext], bool]
"""``stop_when`` entries: return True to end the run with ``stopped == "stopCondition"``."""


def has_tool_call(name: str) -> StopCondition:
    """Stop once the latest turn called the tool ``name``.

    Example: ``define_agent(..., stop_when=has_tool_call("finalize"))``.
    """

    def condition(ctx: StopContext) -> bool:
        return bool(ctx.turns) and any(call.name == name for call in ctx.turns[-1].tool_calls)

    condition.__name__ = f"has_tool_call({name!r})"
    return condition


def step_count_is(count: int) -> StopCondition:
    """Stop once ``count`` turns have run (a softer cousin of ``max_turns``)."""

    def condition(ctx: StopContext) -> bool:
        return len(ctx.turns) >= count

    condition.__name__ = f"step_count_is({count})"
    return condition


@dataclass(frozen=True, slots=True)
class PrepareStepArgs:
    """What ``prepare_step`` sees just before a turn."""

    step_number: int
    messages: list[dict[str, Any]]
    """The prompt about to be sent (OpenAI chat shape, system message first), after compaction."""
    model: Model
    tools: Mapping[str, Any]
    """The agent's tools by name (``ToolDefinition`` values)."""


@dataclass(frozen=True, slots=True)
class PrepareStepResult:
    """Overrides for one turn; a field left None keeps the agent's default.

    ``model`` may be a Model or a ``"provider:model"`` string; ``active_tools`` limits which tools the
    model sees this turn; ``system`` replaces the system message.
    """

    model: Model | str | None = None
    messages: list[dict[str, Any]] | None = None
    tool_choice: ToolChoice | None = None
    active_tools: list[str] | None = None
    system: str | None = None

    _ALIASES = {"toolChoice": "tool_choice", "activeTools": "active_tools"}

    @classmethod
    def coerce(cls, value: PrepareStepResult | Mapping[str, Any] | None) -> PrepareStepResult:
        """Accept what ``prepare_step`` may return: a result, a dict (snake or camel case), or None."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            known = {f.name for f in fields(cls)}
            kwargs: dict[str, Any] = {}
            for key, item in value.items():
                name = cls._ALIASES.get(key, key)
                if name not in known:
                    raise InvalidAgentOptionError(
                        f"prepare_step returned an unknown key {key!r}; use one of {sorted(known)}."
                    )
                kwargs[name] = item
            return cls(**kwargs)
        raise InvalidAgentOptionError(
            f"prepare_step must return a PrepareStepResult, a dict or None, not {type(value).__name__}."
        )


PrepareStep = Callable[[PrepareStepArgs], "PrepareStepResult | Mapping[str, Any] | None"]


@dataclass(frozen=True, slots=True)
class RepairArgs:
    """What ``repair_tool_call`` sees: the bad call, why it failed, the tools and the tool's schema.

    ``input_schema`` is None when the model called a tool that does not exist.
    """

    tool_call: ToolCall
    error: Exception
    tools: Mapping[str, Any]
    input_schema: dict[str, Any] | None


RepairToolCall = Callable[[RepairArgs], "ToolCall | None"]
"""Return a corrected call (keep its ``id``: it names the durable step) or None to give up."""


@dataclass(frozen=True, slots=True)
class StepFinish:
    """What ``on_step_finish`` receives after each turn's tool calls have settled.

    ``tool_results`` holds one dict per call, in call order:
    ``{"tool_call_id", "name", "output", "is_error"}``.
    """

    step_number: int
    turn: ModelTurn
    tool_results: Sequence[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CompactionOptions:
    """History compaction: past ``max_messages``, all but the last ``keep_recent`` messages are
    summarized into one system brief inside the turn's memoized step.

    ``keep_recent`` defaults to ``ceil(max_messages / 2)``; ``model`` (a Model or a
    ``"provider:model"`` string) is a cheaper summarizer, defaulting to the agent's model.
    """

    max_messages: int
    keep_recent: int | None = None
    model: Model | str | None = None

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_messages, bool)
            or not isinstance(self.max_messages, int)
            or self.max_messages < 2
        ):
            raise InvalidAgentOptionError(
                f"compaction.max_messages must be an int >= 2, got {self.max_messages!r}."
            )
        keep = math.ceil(self.max_messages / 2) if self.keep_recent is None else self.keep_recent
        if isinstance(keep, bool) or not isinstance(keep, int) or not 1 <= keep < self.max_messages:
            raise InvalidAgentOptionError(
                f"compaction.keep_recent must be an int in [1, max_messages) = [1, {self.max_messages}), "
                f"got {keep!r}; lower keep_recent or raise max_messages."
            )
        object.__setattr__(self, "keep_recent", keep)

    @property
    def recent(self) -> int:
        """``keep_recent`` resolved (never None after construction)."""
        assert self.keep_recent is not None
        return self.keep_recent

    @classmethod
    def coerce(cls, value: CompactionOptions | Mapping[str, Any] | None) -> CompactionOptions | None:
        """Accept a ``CompactionOptions``, a dict (``max_messages`` / ``maxMessages`` ...) or None."""
        if value is None or isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            aliases = {"maxMessages": "max_messages", "keepRecent": "keep_recent"}
            kwargs = {aliases.get(k, k): v for k, v in value.items()}
            unknown = set(kwargs) - {"max_messages", "keep_recent", "model"}
            if unknown or "max_messages" not in kwargs:
                raise InvalidAgentOptionError(
                    f"compaction takes max_messages (required), keep_recent and model; got {sorted(value)}."
                )
            return cls(**kwargs)
        raise InvalidAgentOptionError(
            "compaction must be a dict like {'max_messages': 40} or CompactionOptions, "
            f"not {type(value).__name__}."
        )
