"""``OpenAIModel``: any OpenAI-compatible chat-completions endpoint, through the ``openai`` SDK.

Set ``OPENAI_BASE_URL`` (or ``base_url=``) to talk to vLLM, Ollama, a llama.cpp server or OpenRouter;
a local server needs no key. Retries (2, with backoff) and timeouts are the SDK's. Besides ``generate`` it
streams (``stream`` / ``astream``, the ``StreamingModel`` seam) and embeds (``embed_texts``, the
``EmbeddingModel`` seam) through ``/v1/embeddings``.

Example::

    model = OpenAIModel("gpt-4o-mini")                                    # OPENAI_API_KEY from the env
    local = OpenAIModel("llama3.1", base_url="http://127.0.0.1:11434/v1")  # Ollama
    turn = model.generate([{"role": "user", "content": "Hi"}], tools=[weather.spec()])
    for event in model.stream([{"role": "user", "content": "Hi"}]): ...    # TextDelta ..., TurnDone
    OpenAIModel("text-embedding-3-small").embed_texts(["a", "b"]).vectors
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import openai

from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.models.base import ModelTurn, ToolChoice, ToolSpec
from lunora_jobs.models.embedding import Embeddings
from lunora_jobs.models.messages import to_wire_messages
from lunora_jobs.models.openai_embed import embed_batches
from lunora_jobs.models.openai_stream import STREAM_OPTIONS, ChunkReader
from lunora_jobs.models.openai_wire import parse_completion, wire_tool_choice
from lunora_jobs.models.streaming import StreamEvent

__all__ = ["DEFAULT_TIMEOUT_S", "OpenAIModel", "parse_completion"]

DEFAULT_TIMEOUT_S = 60.0
"""Per attempt. Three attempts plus backoff stay under the default 300 s step lease, so a slow provider
cannot outlive the lease and get the same turn paid for twice by a second worker."""


class OpenAIModel:
    """A ``Model`` on chat completions: tools, tool choice, JSON-schema output, usage with cached tokens;
    streaming (sync and async) and embeddings on the same endpoint."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: openai.OpenAI | None = None,
        async_client: openai.AsyncOpenAI | None = None,
        name: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = 2,
    ) -> None:
        self.model = model
        self.name = name or f"openai:{model}"
        self._client = client
        self._async_client = async_client
        self._api_key = api_key
        self._base_url = base_url
        self._timeout = timeout
        self._max_retries = max_retries

    @property
    def client(self) -> openai.OpenAI:
        """The SDK client, built on first use (so declaring an agent needs no key)."""
        if self._client is None:
            self._client = openai.OpenAI(**self._client_options())
        return self._client

    @property
    def async_client(self) -> openai.AsyncOpenAI:
        """The asyncio SDK client (``astream``), built on first use."""
        if self._async_client is None:
            self._async_client = openai.AsyncOpenAI(**self._client_options())
        return self._async_client

    def _client_options(self) -> dict[str, Any]:
        settings = Settings()
        base_url = self._base_url or settings.openai_base_url
        api_key = self._api_key or settings.openai_api_key
        if not api_key:
            if not base_url:
                raise ConfigurationError(
                    "OpenAIModel needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local server "
                    "such as vLLM, "
                    "Ollama or llama.cpp); set one, or use model='offline'."
                )
            api_key = "not-needed"  # local OpenAI-compatible servers ignore the key
        return {"api_key": api_key, "base_url": base_url, "timeout": self._timeout,
                "max_retries": self._max_retries}

    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        """One chat-completions call; see ``request_params`` for the mapping."""
        params = self.request_params(
            messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema
        )
        response = self.client.chat.completions.create(**params)
        return parse_completion(response, default_model=self.model)

    def stream(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        """One streamed turn: text and tool-call deltas as they arrive, then ``TurnDone``."""
        params = self.request_params(
            messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema
        )
        reader = ChunkReader(self.model)
        with self.client.chat.completions.create(
            **params, stream=True, stream_options=STREAM_OPTIONS
        ) as chunks:
            for chunk in chunks:
                yield from reader.feed(chunk)
        yield reader.done()

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
        reader = ChunkReader(self.model)
        stream = await self.async_client.chat.completions.create(
            **params, stream=True, stream_options=STREAM_OPTIONS
        )
        async with stream as chunks:
            async for chunk in chunks:
                for event in reader.feed(chunk):
                    yield event
        yield reader.done()

    def embed_texts(self, texts: Sequence[str], *, dimensions: int | None = None) -> Embeddings:
        """Embed ``texts`` with this model on ``/v1/embeddings`` (batched by the API's input cap)."""
        return embed_batches(self.client, self.model, texts, dimensions=dimensions)

    def request_params(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for one turn."""
        params: dict[str, Any] = {"model": self.model, "messages": to_wire_messages(messages)}
        if tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in tools
            ]
            params["tool_choice"] = wire_tool_choice(tool_choice)
        if output_schema is not None:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": output_schema, "strict": False},
            }
        return params

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model!r}, name={self.name!r})"


