"""``generate_object`` and ``stream_object``: an answer that validates against a pydantic model or schema.

The schema goes to the provider as its structured-output format (``response_format`` on chat
completions, ``output_config.format`` on Anthropic). ``generate_object`` validates the answer and, when
it does not match, shows the model the validation error and asks again, at most ``max_repairs`` times.
``stream_object`` yields the partial object as its JSON arrives and validates the finished one.

Example::

    class Sentiment(BaseModel):
        sentiment: Literal["positive", "neutral", "negative"]

    result = generate_object(model="openai:gpt-4o-mini", schema=Sentiment, prompt=review)
    result.object.sentiment, result.usage, result.repairs

    for partial in stream_object(model="openai:gpt-4o-mini", schema=Story, prompt="..."):
        print(partial)          # {"title": "The"}, {"title": "The Lighthouse"}, ...
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, TypeVar, overload

import pydantic_core
from pydantic import BaseModel

from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError, ObjectGenerationError, OutputParseError
from lunora_jobs.models.base import Model, ModelTurn, Usage
from lunora_jobs.models.output import OutputSpec
from lunora_jobs.models.streaming import StreamEvent, TextDelta, TurnDone, astream_turn, stream_turn

from ._call import ModelOption, prompt_messages, resolve
from ._stream import HelperStream
from .results import ObjectResult

M = TypeVar("M", bound=BaseModel)

MAX_REPAIRS_LIMIT = 5
REPAIR_PROMPT = (
    "Your answer does not match the required JSON schema: {error}\n"
    "Answer again with only the corrected JSON, matching the schema exactly."
)
"""The user message a repair sends after the failed answer."""


@overload
def generate_object(
    *, schema: type[M], model: ModelOption = ..., prompt: str | None = ..., system: str | None = ...,
    messages: Sequence[dict[str, Any]] | None = ..., max_repairs: int = ..., settings: Settings | None = ...,
) -> ObjectResult[M]: ...


@overload
def generate_object(
    *, schema: dict[str, Any], model: ModelOption = ..., prompt: str | None = ..., system: str | None = ...,
    messages: Sequence[dict[str, Any]] | None = ..., max_repairs: int = ..., settings: Settings | None = ...,
) -> ObjectResult[Any]: ...


def generate_object(
    *,
    schema: type[BaseModel] | dict[str, Any],
    model: ModelOption = "auto",
    prompt: str | None = None,
    system: str | None = None,
    messages: Sequence[dict[str, Any]] | None = None,
    max_repairs: int = 1,
    settings: Settings | None = None,
) -> ObjectResult[Any]:
    """Generate a value matching ``schema`` (a pydantic model class → an instance; a JSON schema → a dict).

    An answer that is not JSON or fails validation is sent back with the error, up to ``max_repairs``
    times; after that ``ObjectGenerationError`` (with the last text and the usage of every attempt).
    """
    spec = _spec(schema)
    if not 0 <= max_repairs <= MAX_REPAIRS_LIMIT:
        raise ConfigurationError(f"max_repairs must be between 0 and {MAX_REPAIRS_LIMIT}, got {max_repairs}.")
    resolved = resolve(model, settings)
    history = prompt_messages(prompt, system, messages)
    usage = Usage()
    error: OutputParseError | None = None
    turn: ModelTurn | None = None
    for attempt in range(max_repairs + 1):
        turn = resolved.generate(history, output_schema=spec.json_schema)
        usage = usage + turn.usage
        try:
            value = spec.parse(turn.text)
        except OutputParseError as exc:
            error = exc
            history = [
                *history,
                {"role": "assistant", "content": turn.text or ""},
                {"role": "user", "content": REPAIR_PROMPT.format(error=exc)},
            ]
            continue
        return ObjectResult(
            value, turn.text or "", turn.finish_reason, usage, _model(turn, resolved), repairs=attempt
        )
    raise ObjectGenerationError(
        f"No answer matched the schema after {max_repairs} repair(s): {error}",
        text=turn.text if turn else None, usage=usage,
    )


class ObjectStream(HelperStream[ObjectResult[Any]]):
    """A ``stream_object`` call: iterate (``for`` / ``async for``) for partial objects, then the result.

    Each partial is the JSON received so far, parsed leniently (a dict, not yet validated), yielded when
    it changes. ``object`` is the validated value once the stream has ended; an answer that does not
    validate raises ``ObjectGenerationError`` at the end of the stream.
    """

    def __iter__(self) -> Iterator[Any]:
        partial = _Partial()
        for event in self.events():
            if isinstance(event, TextDelta) and partial.feed(event.text):
                yield partial.value

    async def __aiter__(self) -> AsyncIterator[Any]:
        partial = _Partial()
        async for event in self.aevents():
            if isinstance(event, TextDelta) and partial.feed(event.text):
                yield partial.value

    @property
    def object(self) -> Any:
        """The validated value."""
        return self.final().object


def stream_object(
    *,
    schema: type[BaseModel] | dict[str, Any],
    model: ModelOption = "auto",
    prompt: str | None = None,
    system: str | None = None,
    messages: Sequence[dict[str, Any]] | None = None,
    settings: Settings | None = None,
) -> ObjectStream:
    """``generate_object``, streamed (no repair round: what streamed is what is validated)."""
    spec = _spec(schema)
    resolved = resolve(model, settings)
    history = prompt_messages(prompt, system, messages)
    done: list[ModelTurn] = []

    def sync_events() -> Iterator[StreamEvent]:
        for event in stream_turn(resolved, history, output_schema=spec.json_schema):
            if isinstance(event, TurnDone):
                done.append(event.turn)
            yield event

    async def async_events() -> AsyncIterator[StreamEvent]:
        async for event in astream_turn(resolved, history, output_schema=spec.json_schema):
            if isinstance(event, TurnDone):
                done.append(event.turn)
            yield event

    def finish() -> ObjectResult[Any]:
        turn = done[-1]
        try:
            value = spec.parse(turn.text)
        except OutputParseError as exc:
            raise ObjectGenerationError(str(exc), text=turn.text, usage=turn.usage) from exc
        return ObjectResult(value, turn.text or "", turn.finish_reason, turn.usage, _model(turn, resolved))

    return ObjectStream(sync_events, async_events, finish)


class _Partial:
    """The JSON text streamed so far and its lenient parse."""

    def __init__(self) -> None:
        self.text = ""
        self.value: Any = None

    def feed(self, delta: str) -> bool:
        """Add ``delta``; True when the parsed value changed."""
        self.text += delta
        body = self.text.lstrip()
        if body.startswith("```"):  # a fenced answer: parse what follows the fence line
            body = body.split("\n", 1)[1] if "\n" in body else ""
        try:
            value = pydantic_core.from_json(body, allow_partial="trailing-strings")
        except ValueError:
            return False
        if value == self.value:
            return False
        self.value = value
        return True


def _spec(schema: Any) -> OutputSpec:
    if not (isinstance(schema, dict) or (isinstance(schema, type) and issubclass(schema, BaseModel))):
        raise ConfigurationError(
            f"schema must be a pydantic model class or a JSON-schema dict, not {type(schema).__name__}."
        )
    spec = OutputSpec.coerce(schema)
    assert spec is not None
    return spec


def _model(turn: ModelTurn, model: Model) -> str:
    return turn.model or model.name
