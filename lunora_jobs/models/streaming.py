"""Streaming on the model seam: a turn as a sequence of deltas ending in the finished ``ModelTurn``.

A model that can stream implements ``StreamingModel`` (``stream`` and ``astream``); ``stream_turn`` and
``astream_turn`` drive any ``Model``, falling back to one ``generate`` call (one text delta, then the
turn) for models that cannot. The last event of every stream is ``TurnDone`` carrying the same
``ModelTurn`` a ``generate`` call would have returned, so a caller that shows deltas live (token
streaming of an agent turn, ``lunora_jobs.ai.stream_text``) still records one memoizable turn.

Example::

    for event in stream_turn(model, [{"role": "user", "content": "Hi"}]):
        if isinstance(event, TextDelta):
            print(event.text, end="", flush=True)
        elif isinstance(event, TurnDone):
            turn = event.turn          # text == "".join(all TextDelta texts)
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from lunora_jobs.models.base import Model, ModelTurn, ToolChoice, ToolSpec


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the turn's text (the answer, or the JSON of a structured answer)."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call as it streams: ``index`` orders the turn's calls; ``id`` and ``name`` are
    set on the call's first delta, ``arguments`` is the next piece of its raw JSON argument text."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class TurnDone:
    """The finished turn: text, parsed tool calls, usage and finish reason."""

    turn: ModelTurn


StreamEvent = TextDelta | ToolCallDelta | TurnDone


@runtime_checkable
class StreamingModel(Protocol):
    """A ``Model`` that can also stream a turn, from sync code and from an event loop."""

    name: str

    def stream(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        """Stream one turn; the last event is ``TurnDone``."""
        ...

    def astream(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """The same stream without blocking the event loop."""
        ...


def stream_turn(
    model: Model,
    messages: Sequence[dict[str, Any]],
    *,
    tools: Sequence[ToolSpec] = (),
    tool_choice: ToolChoice = "auto",
    output_schema: dict[str, Any] | None = None,
) -> Iterator[StreamEvent]:
    """Stream one turn of ``model``; a model without ``stream`` yields its whole text as one delta."""
    if isinstance(model, StreamingModel):
        yield from model.stream(messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema)
        return
    turn = model.generate(messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema)
    yield from turn_events(turn)


async def astream_turn(
    model: Model,
    messages: Sequence[dict[str, Any]],
    *,
    tools: Sequence[ToolSpec] = (),
    tool_choice: ToolChoice = "auto",
    output_schema: dict[str, Any] | None = None,
) -> AsyncIterator[StreamEvent]:
    """``stream_turn`` for an event loop; a non-streaming model's ``generate`` runs on a worker thread."""
    if isinstance(model, StreamingModel):
        async for event in model.astream(
            messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema
        ):
            yield event
        return
    turn = await asyncio.to_thread(
        model.generate, messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema
    )
    for event in turn_events(turn):
        yield event


def turn_events(turn: ModelTurn, *, by_word: bool = False) -> Iterator[StreamEvent]:
    """The events of an already finished turn: its text (whole, or word by word), its tool calls, then
    ``TurnDone``. Non-streaming models stream through this; the offline model streams word by word."""
    if turn.text:
        pieces = re.findall(r"\S+\s*|\s+", turn.text) if by_word else [turn.text]
        for piece in pieces:
            yield TextDelta(piece)
    for index, call in enumerate(turn.tool_calls):
        yield ToolCallDelta(index, call.id, call.name, call.raw_arguments or json.dumps(call.arguments))
    yield TurnDone(turn)
