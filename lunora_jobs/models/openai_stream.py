"""Chat-completions streaming: ``chat.completion.chunk`` objects → ``StreamEvent``s and the final turn.

The SDK's ``ChatCompletionStreamState`` accumulates the chunks into the completion a non-streamed call
would have returned, so the finished turn is parsed by the same ``parse_completion`` as ``generate``;
the deltas are read off each raw chunk (they carry the tool-call ids the accumulated events do not).
"""

from __future__ import annotations

from typing import Any

from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionStreamOptionsParam

from lunora_jobs.models.openai_wire import parse_completion
from lunora_jobs.models.streaming import StreamEvent, TextDelta, ToolCallDelta, TurnDone

STREAM_OPTIONS: ChatCompletionStreamOptionsParam = {"include_usage": True}
"""A streamed turn ends with a usage-only chunk."""


class ChunkReader:
    """Reads one streamed completion, chunk by chunk."""

    def __init__(self, default_model: str | None) -> None:
        self._state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        self._default_model = default_model
        self._seen = False

    def feed(self, chunk: Any) -> list[StreamEvent]:
        """The deltas ``chunk`` carries (it is also folded into the accumulated completion)."""
        self._state.handle_chunk(chunk)
        self._seen = True
        events: list[StreamEvent] = []
        for choice in chunk.choices or []:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta.content:
                events.append(TextDelta(delta.content))
            for call in delta.tool_calls or []:
                function = call.function
                events.append(
                    ToolCallDelta(
                        index=call.index,
                        id=call.id,
                        name=function.name if function is not None else None,
                        arguments=(function.arguments if function is not None else None) or "",
                    )
                )
        return events

    def done(self) -> TurnDone:
        """The finished turn (call once the stream has ended)."""
        if not self._seen:
            return TurnDone(parse_completion(_Empty(), default_model=self._default_model))
        turn = parse_completion(self._state.get_final_completion(), default_model=self._default_model)
        if turn.tool_calls and turn.text == "":  # the opening role chunk carries content ""
            turn = type(turn)(
                text=None, tool_calls=turn.tool_calls, usage=turn.usage,
                finish_reason=turn.finish_reason, model=turn.model,
            )
        return TurnDone(turn)


class _Empty:
    """A stream that ended before its first chunk: no choices, no usage."""

    choices: list[Any] = []
    usage = None
    model = None
