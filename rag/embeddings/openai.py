"""``OpenAIEmbedder``: embeddings from OpenAI or any OpenAI-compatible ``/v1/embeddings`` endpoint.

Built on the official ``openai`` SDK (retries, timeouts, base64 transport). One ``embed_many`` call
becomes as few requests as the provider's limits allow: at most ``max_batch_size`` inputs (OpenAI:
2048) and at most ``max_batch_tokens`` tokens (OpenAI: 300,000) per request. Without an injected
``count_tokens`` the token bound uses UTF-8 bytes, which is an upper bound (a BPE token covers at
least one byte), never an estimate presented as a count.

Example::

    from rag.embeddings.openai import OpenAIEmbedder
    embedder = OpenAIEmbedder("text-embedding-3-small")                 # OPENAI_API_KEY from the env
    local = OpenAIEmbedder("nomic-embed-text", base_url="http://127.0.0.1:11434/v1")
    vectors = embedder.embed_many(["first chunk", "second chunk"])
    embedder.last_usage            # TokenUsage(input_tokens=..., cost_usd=<provider-reported or None>)
    embedder.last_cost()           # ModelCost(usd=4e-07, source="estimate"), or None if unpriced
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rag.cost import ModelCost, ModelPrice, TokenUsage, resolve_model_cost
from rag.errors import (
    EmbedderUnavailableError,
    EmbeddingInputError,
    EmbeddingResponseError,
    RagConfigurationError,
)
from rag.settings import RagSettings

from .base import checked_texts
from .batching import plan_batches


class OpenAIEmbedder:
    """An ``Embedder`` over the OpenAI embeddings API (or a compatible server via ``base_url``).

    ``dimensions`` asks text-embedding-3 models for shortened (Matryoshka) vectors; when unset it is
    learned from the first response. ``last_usage`` holds the tokens of the last ``embed_many`` call
    (and ``cost_usd`` only when the provider reported one); ``total_usage`` accumulates over calls.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        dimensions: int | None = None,
        max_batch_size: int = 2048,
        max_batch_tokens: int = 300_000,
        count_tokens: Callable[[str], int] | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        client: Any | None = None,
        prices: Mapping[str, ModelPrice] | None = None,
    ) -> None:
        if max_batch_size < 1 or max_batch_tokens < 1:
            raise RagConfigurationError("max_batch_size and max_batch_tokens must be at least 1")
        self.model = model
        self.dimensions = dimensions
        self._requested_dimensions = dimensions  # sent to the API only when the caller asked for it
        self.max_batch_size = max_batch_size
        self.max_batch_tokens = max_batch_tokens
        self.count_tokens = count_tokens
        self.prices = prices
        self.last_usage: TokenUsage | None = None
        self.total_usage = TokenUsage()
        self._usage_lock = threading.Lock()
        self._client = client if client is not None else _make_client(api_key, base_url, timeout, max_retries)

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` in as few requests as the limits allow; the result lines up with ``texts``."""
        texts = checked_texts(texts)
        for i, text in enumerate(texts):
            if not text.strip():
                raise EmbeddingInputError(
                    f"text #{i} is empty; OpenAI-compatible endpoints reject empty input -- "
                    "drop empty chunks (or queries) before embedding"
                )
        measure = self.count_tokens or _utf8_len
        vectors: list[list[float]] = []
        usage = TokenUsage()
        for batch in plan_batches(texts, measure, self.max_batch_size, self.max_batch_tokens):
            batch_vectors, batch_usage = self._request(batch)
            vectors.extend(batch_vectors)
            usage = usage + batch_usage
        with self._usage_lock:
            self.last_usage = usage
            self.total_usage = self.total_usage + usage
        return vectors

    def _request(self, batch: list[str]) -> tuple[list[list[float]], TokenUsage]:
        kwargs: dict[str, Any] = {"model": self.model, "input": batch}
        if self._requested_dimensions is not None:
            kwargs["dimensions"] = self._requested_dimensions
        response = self._client.embeddings.create(**kwargs)
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch) or [d.index for d in data] != list(range(len(batch))):
            raise EmbeddingResponseError(
                f"{self.model}: asked for {len(batch)} embeddings, the endpoint returned {len(data)} "
                "(or out-of-range indexes); check the server's /v1/embeddings implementation"
            )
        vectors = [list(map(float, d.embedding)) for d in data]
        widths = {len(v) for v in vectors}
        expected = self.dimensions if self.dimensions is not None else next(iter(widths))
        if widths != {expected}:
            raise EmbeddingResponseError(
                f"{self.model}: embeddings of widths {sorted(widths)} where {expected} was expected; "
                "the model changed under this embedder -- create a new one (and bump embedding_model_version)"
            )
        self.dimensions = expected
        return vectors, _usage_of(response)

    def last_cost(self) -> ModelCost | None:
        """Dollar cost of the last call and where it came from (``rag.cost.resolve_model_cost``).

        A provider-reported cost always wins (source ``"provider"``); otherwise it is estimated from
        the token count and the price table (``"estimate"``); an unpriced model gives ``None`` --
        never 0, which would quietly sum into a total.
        """
        if self.last_usage is None:
            return None
        return resolve_model_cost(self.model, self.last_usage, self.prices)


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _usage_of(response: Any) -> TokenUsage:
    """Tokens (and a provider-reported cost, e.g. OpenRouter's ``usage.cost``) of one response."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return TokenUsage()
    tokens = getattr(usage, "prompt_tokens", None) or getattr(usage, "total_tokens", None) or 0
    extra = getattr(usage, "model_extra", None) or {}
    cost = extra.get("cost", getattr(usage, "cost", None))
    reported = float(cost) if isinstance(cost, int | float) else None
    return TokenUsage(input_tokens=int(tokens), cost_usd=reported)


def _make_client(api_key: str | None, base_url: str | None, timeout: float, max_retries: int) -> Any:
    try:
        import openai
    except ImportError as exc:
        raise EmbedderUnavailableError(
            'OpenAIEmbedder needs the openai SDK; install it with pip install "lunora-jobs[openai]"'
        ) from exc
    settings = RagSettings()
    base_url = base_url or settings.openai_base_url or None
    api_key = api_key or settings.openai_api_key
    if not api_key:
        if base_url is None:
            raise RagConfigurationError(
                "OpenAIEmbedder has no API key: set OPENAI_API_KEY, pass api_key=..., or point base_url= "
                "at an OpenAI-compatible server that needs none"
            )
        api_key = "unused"  # local compatible servers ignore it, but the SDK insists on one
    return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
