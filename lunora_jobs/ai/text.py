"""``generate_text`` and ``stream_text``: one model call, or a bounded loop of tool rounds.

Example::

    from lunora_jobs.ai import generate_text, stream_text

    result = generate_text(model="openai:gpt-4o-mini", prompt="Summarize: ...")
    result.text, result.usage, result.finish_reason

    result = generate_text(model="openai:gpt-4o-mini", prompt="Weather in Berlin?", tools=[get_weather],
                           max_steps=3)       # call the tool, then answer with its result
    stream = stream_text(model="anthropic:claude-sonnet-4-5", prompt="Tell me a story")
    for delta in stream:                      # or: async for delta in stream
        print(delta, end="")
    stream.text, stream.usage                 # once the stream has ended
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from lunora_jobs.config import Settings
from lunora_jobs.models.base import Model, ModelTurn, ToolChoice
from lunora_jobs.models.streaming import StreamEvent, TextDelta, TurnDone, astream_turn, stream_turn
from lunora_jobs.tools import ToolContext, ToolDefinition

from ._call import ModelOption, prompt_messages, resolve
from ._rounds import ToolRounds, tool_map
from ._stream import HelperStream
from .results import StepResult, TextResult

Tools = Sequence[ToolDefinition] | dict[str, ToolDefinition] | None


def generate_text(
    *,
    model: ModelOption = "auto",
    prompt: str | None = None,
    system: str | None = None,
    messages: Sequence[dict[str, Any]] | None = None,
    tools: Tools = None,
    tool_choice: ToolChoice = "auto",
    max_steps: int = 1,
    context: ToolContext | None = None,
    settings: Settings | None = None,
) -> TextResult:
    """Generate text with ``model`` (``"provider:model"`` as agents take it, or a ``Model``).

    Give ``prompt`` (one user message) or ``messages`` (OpenAI chat shape), optionally ``system``. With
    ``tools`` (``@tool`` definitions), each step runs the tools the model called; up to ``max_steps``
    model calls are made while the model keeps calling tools (``max_steps=1``: the tools run, their
    results are in ``result.tool_results``, and no second call is made). Inside a tool, pass its
    ``ctx`` as ``context`` so nested tools share its run, thread, owner and state.
    """
    resolved = resolve(model, settings)
    rounds = _rounds(prompt, system, messages, tools, tool_choice, max_steps, context)
    while True:
        turn = resolved.generate(rounds.messages, tools=rounds.specs, tool_choice=rounds.tool_choice)
        if not rounds.finish_step(_named(turn, resolved)):
            return rounds.result()


class TextStream(HelperStream[TextResult]):
    """A ``stream_text`` call: iterate (``for`` / ``async for``) for text deltas, then read the result.

    ``events()`` / ``aevents()`` give every model event instead (tool-call deltas, ``TurnDone`` per step).
    ``text``, ``usage``, ``finish_reason`` and ``steps`` are there once the stream has ended;
    ``result()`` / ``await aresult()`` finish reading it first.
    """

    def __iter__(self) -> Iterator[str]:
        for event in self.events():
            if isinstance(event, TextDelta):
                yield event.text

    async def __aiter__(self) -> AsyncIterator[str]:
        async for event in self.aevents():
            if isinstance(event, TextDelta):
                yield event.text

    @property
    def text(self) -> str:
        """The last step's text (every delta of that step, joined)."""
        return self.final().text

    @property
    def steps(self) -> list[StepResult]:
        """Every model call and the tools it ran."""
        return self.final().steps


def stream_text(
    *,
    model: ModelOption = "auto",
    prompt: str | None = None,
    system: str | None = None,
    messages: Sequence[dict[str, Any]] | None = None,
    tools: Tools = None,
    tool_choice: ToolChoice = "auto",
    max_steps: int = 1,
    context: ToolContext | None = None,
    settings: Settings | None = None,
) -> TextStream:
    """``generate_text``, streamed: the model is called when the stream is first read.

    Each step streams its deltas; between steps the tools run (on a worker thread under ``async for``).
    A model that cannot stream answers each step with one delta.
    """
    resolved = resolve(model, settings)
    rounds = _rounds(prompt, system, messages, tools, tool_choice, max_steps, context)

    def sync_events() -> Iterator[StreamEvent]:
        while True:
            turn: ModelTurn | None = None
            for event in stream_turn(
                resolved, rounds.messages, tools=rounds.specs, tool_choice=rounds.tool_choice
            ):
                if isinstance(event, TurnDone):
                    turn = _named(event.turn, resolved)
                    event = TurnDone(turn)
                yield event
            if turn is None or not rounds.finish_step(turn):
                return

    async def async_events() -> AsyncIterator[StreamEvent]:
        while True:
            turn: ModelTurn | None = None
            async for event in astream_turn(
                resolved, rounds.messages, tools=rounds.specs, tool_choice=rounds.tool_choice
            ):
                if isinstance(event, TurnDone):
                    turn = _named(event.turn, resolved)
                    event = TurnDone(turn)
                yield event
            if turn is None or not await asyncio.to_thread(rounds.finish_step, turn):
                return

    return TextStream(sync_events, async_events, rounds.result)


def _rounds(
    prompt: str | None,
    system: str | None,
    messages: Sequence[dict[str, Any]] | None,
    tools: Tools,
    tool_choice: ToolChoice,
    max_steps: int,
    context: ToolContext | None,
) -> ToolRounds:
    return ToolRounds(
        prompt_messages(prompt, system, messages), tool_map(tools),
        max_steps=max_steps, tool_choice=tool_choice, context=context,
    )


def _named(turn: ModelTurn, model: Model) -> ModelTurn:
    """The turn labelled with the model that took it when the provider did not say."""
    if turn.model is not None:
        return turn
    return ModelTurn(turn.text, turn.tool_calls, turn.usage, turn.finish_reason, model.name)
