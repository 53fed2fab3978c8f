"""``AnthropicModel``: Claude through Anthropic's Messages API and its own SDK (extra ``anthropic``).

Registered as ``"anthropic:<model>"``; the key and base URL come from Settings (``ANTHROPIC_API_KEY``,
``ANTHROPIC_BASE_URL``). Retries (2, with backoff) and timeouts are the SDK's. It generates, streams
(``stream`` / ``astream``) and takes the same tools, tool choice and output schema as every ``Model``;
``anthropic_wire`` holds the translation. Anthropic has no embeddings endpoint, so it is no
``EmbeddingModel``.

Example::

    model = AnthropicModel("claude-sonnet-4-5")                       # ANTHROPIC_API_KEY from Settings
    turn = model.generate([{"role": "user", "content": "Hi"}], tools=[weather.spec()])
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import anthropic

from lunora_jobs.errors import ConfigurationError
from lunora_jobs.models.anthropic_wire import parse_message, request_params
from lunora_jobs.models.base import ModelTurn, ToolChoice, ToolSpec
from lunora_jobs.models.streaming import StreamEvent, TextDelta, ToolCallDelta, TurnDone

DEFAULT_MAX_TOKENS = 4096
"""The Messages API requires a cap on the answer's length; this one suits agent turns."""
DEFAULT_TIMEOUT_S = 60.0
"""Per attempt, as for ``OpenAIModel``: three attempts plus backoff stay under the 300 s step lease."""


class AnthropicModel:
    """A ``Model`` (and ``StreamingModel``) on Anthropic's Messages API."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        client: anthropic.Anthropic | None = None,
        async_client: anthropic.AsyncAnthropic | None = None,
        name: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = 2,
    ) -> None:
        if max_tokens < 1:
            raise ConfigurationError(f"max_tokens must be at least 1, got {max_tokens}.")
        self.model = model
        self.name = name or f"anthropic:{model}"
        self.max_tokens = max_tokens
        self._client = client
        self._async_client = async_client
        self._api_key = api_key
        self._base_url = base_url
        self._timeout = timeout
        self._max_retries = max_retries

    @property
    def client(self) -> anthropic.Anthropic:
        """The SDK client, built on first use (so declaring an agent needs no key)."""
        if self._client is None:
            self._client = anthropic.Anthropic(**self._client_options())
        return self._client

    @property
    def async_client(self) -> anthropic.AsyncAnthropic:
        """The asyncio SDK client (``astream``), built on first use."""
        if self._async_client is None:
            self._async_client = anthropic.AsyncAnthropic(**self._client_options())
        return self._async_client

    def _client_options(self) -> dict[str, Any]:
        if not self._api_key:
            raise ConfigurationError(
                f"{self.name} needs ANTHROPIC_API_KEY; set it (or pass api_key=), or use another model."
            )
        return {
            "api_key": self._api_key,
            "base_url": self._base_url,
            "timeout": self._timeout,
            "max_retries": self._max_retries,
        }

    def request_params(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for one turn."""
        return request_params(
            self.model, self.max_tokens, messages,
            tools=tools, tool_choice=tool_choice, output_schema=output_schema,
        )

    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        """One Messages API call."""
        params = self.request_params(
            messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema
        )
        return parse_message(self.client.messages.create(**params), default_model=self.model)

    def stream(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        """One streamed turn (the SDK's ``messages.stream`` accumulates the final message)."""
        params = self.request_params(
            messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema
        )
        reader = _EventReader()
        with self.client.messages.stream(**params) as events:
            for event in events:
                yield from reader.feed(event)
            final = events.get_final_message()
        yield TurnDone(parse_message(final, default_model=self.model))

    async def astream(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """``stream`` on the asyncio client."""
        params = self.request_params(
            messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema
        )
        reader = _EventReader()
        async with self.async_client.messages.stream(**params) as events:
            async for event in events:
                for item in reader.feed(event):
                    yield item
            final = await events.get_final_message()
        yield TurnDone(parse_message(final, default_model=self.model))

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model!r}, name={self.name!r})"


class _EventReader:
    """Raw stream events → deltas; tool calls are numbered in the order their blocks open."""

    def __init__(self) -> None:
        self._tool_index: dict[int, int] = {}

    def feed(self, event: Any) -> list[StreamEvent]:
        kind = getattr(event, "type", None)
        if kind == "content_block_start" and event.content_block.type == "tool_use":
            index = self._tool_index[event.index] = len(self._tool_index)
            block = event.content_block
            return [ToolCallDelta(index=index, id=block.id, name=block.name)]
        if kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                return [TextDelta(delta.text)]
            if delta.type == "input_json_delta" and event.index in self._tool_index:
                return [ToolCallDelta(index=self._tool_index[event.index], arguments=delta.partial_json)]
        return []
