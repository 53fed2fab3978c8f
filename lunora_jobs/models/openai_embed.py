"""``/v1/embeddings`` through the openai SDK: one request per ``MAX_INPUTS`` texts, vectors in order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lunora_jobs.errors import ModelInputError, ModelResponseError
from lunora_jobs.models.base import Usage
from lunora_jobs.models.embedding import Embeddings

MAX_INPUTS = 2048
"""OpenAI's cap on the inputs of one embeddings request."""


def embed_batches(
    client: Any, model: str, texts: Sequence[str], *, dimensions: int | None = None
) -> Embeddings:
    """Embed ``texts`` in requests of at most ``MAX_INPUTS``; usage sums over the requests."""
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            raise ModelInputError(
                f"text #{i} is empty (or not a string); OpenAI-compatible endpoints reject empty input -- "
                "drop it before embedding"
            )
    vectors: list[list[float]] = []
    usage = Usage()
    served_by: str | None = None
    for start in range(0, len(texts), MAX_INPUTS):
        batch = list(texts[start : start + MAX_INPUTS])
        kwargs: dict[str, Any] = {"model": model, "input": batch}
        if dimensions is not None:
            kwargs["dimensions"] = dimensions
        response = client.embeddings.create(**kwargs)
        data = sorted(response.data, key=lambda item: item.index)
        if [d.index for d in data] != list(range(len(batch))):
            raise ModelResponseError(
                f"{model}: asked for {len(batch)} embeddings, the endpoint returned {len(data)} "
                "(or out-of-range indexes); check the server's /v1/embeddings implementation"
            )
        vectors.extend([float(x) for x in d.embedding] for d in data)
        usage = usage + _usage(response)
        served_by = served_by or getattr(response, "model", None)
    return Embeddings(vectors=vectors, usage=usage, model=served_by or model)


def _usage(response: Any) -> Usage:
    usage = getattr(response, "usage", None)
    if usage is None:
        return Usage()
    extra = getattr(usage, "model_extra", None) or {}
    cost = extra.get("cost")  # OpenRouter reports the billed cost
    return Usage(
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )
