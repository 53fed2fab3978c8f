"""``ScriptedModel``: a model that plays back a fixed list of turns, for tests.

It is stateless: the turn it returns is picked by counting the assistant turns already in the prompt,
so every worker process (and every replay) gets the same answer for the same prompt.

Example::

    model = ScriptedModel([
        tool_call_turn("call_1", "get_weather", {"city": "Berlin"}),
        final_turn("It is sunny in Berlin."),
    ])
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lunora_jobs.errors import ScriptExhaustedError
from lunora_jobs.models.base import ModelTurn, ToolCall, ToolChoice, ToolSpec, Usage
from lunora_jobs.models.messages import count_assistant_turns
from lunora_jobs.models.offline import OfflineModel

__all__ = ["OfflineModel", "ScriptedModel", "final_turn", "tool_call_turn", "tool_calls_turn"]


class ScriptedModel:
    """Plays ``turns`` in order; turn *n* answers a prompt holding *n* assistant turns."""

    def __init__(self, turns: Sequence[ModelTurn], *, name: str = "scripted") -> None:
        self.turns = list(turns)
        self.name = name

    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        """Return the scripted turn for this point of the conversation."""
        index = count_assistant_turns(messages)
        if index >= len(self.turns):
            raise ScriptExhaustedError(
                f"ScriptedModel {self.name!r} has {len(self.turns)} turns but the prompt "
                f"already holds {index} "
                "assistant turns; add more turns to the script."
            )
        turn = self.turns[index]
        return (
            turn
            if turn.model
            else ModelTurn(
                text=turn.text,
                tool_calls=turn.tool_calls,
                usage=turn.usage,
                finish_reason=turn.finish_reason,
                model=self.name,
            )
        )

    def __repr__(self) -> str:
        return f"ScriptedModel({len(self.turns)} turns, name={self.name!r})"


def final_turn(text: str = "", *, usage: Usage | None = None, output: Any = None) -> ModelTurn:
    """A final answer. ``output`` (a dict or pydantic model) becomes the JSON text of a structured answer."""
    if output is not None:
        dump = getattr(output, "model_dump", None)
        text = json.dumps(dump(mode="json") if callable(dump) else output)
    return ModelTurn(text=text, usage=usage or Usage(), finish_reason="stop")


def tool_call_turn(
    id: str,
    name: str,
    input: dict[str, Any] | None = None,
    text: str | None = None,
    *,
    usage: Usage | None = None,
) -> ModelTurn:
    """A turn that calls one tool; ``id`` is the provider's call id (it names the durable step)."""
    return tool_calls_turn([(id, name, input or {})], text=text, usage=usage)


def tool_calls_turn(
    calls: Sequence[tuple[str, str, dict[str, Any]]], text: str | None = None, *, usage: Usage | None = None
) -> ModelTurn:
    """A turn with several parallel tool calls: ``[(id, name, input), ...]``."""
    return ModelTurn(
        text=text,
        tool_calls=[ToolCall(id=i, name=n, arguments=dict(a)) for i, n, a in calls],
        usage=usage or Usage(),
        finish_reason="tool_calls",
    )
