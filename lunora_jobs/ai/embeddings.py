"""``embed`` and ``embed_many``: vectors from any registered provider whose models embed.

``model`` is a ``"provider:model"`` string from the same registry agents use (``openai:<model>`` for
OpenAI or any OpenAI-compatible ``/v1/embeddings``), or a model object implementing ``EmbeddingModel``.

Example::

    from lunora_jobs.ai import embed, embed_many

    embed(model="openai:text-embedding-3-small", value="sunny day at the beach").embedding
    result = embed_many(model="openai:text-embedding-3-small", values=["first", "second"])
    result.embeddings, result.usage          # vectors in input order; usage of every request
"""

from __future__ import annotations

from collections.abc import Sequence

from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError, ModelCapabilityError, ModelResponseError
from lunora_jobs.models.embedding import EmbeddingModel, Embeddings

from ._call import ModelOption, resolve
from .results import EmbedManyResult, EmbedResult


def embed(
    *, model: ModelOption, value: str, dimensions: int | None = None, settings: Settings | None = None
) -> EmbedResult:
    """Embed one text (``dimensions`` asks for shortened vectors where the model supports it)."""
    out = _embed(model, [value], dimensions, settings)
    return EmbedResult(embedding=out.vectors[0], usage=out.usage, model=out.model, value=value)


def embed_many(
    *,
    model: ModelOption,
    values: Sequence[str],
    dimensions: int | None = None,
    settings: Settings | None = None,
) -> EmbedManyResult:
    """Embed many texts in as few requests as the provider allows; the result lines up with ``values``."""
    if isinstance(values, str):
        raise ConfigurationError("values must be a list of strings; for one text use embed(value=...).")
    values = list(values)
    if not values:
        return EmbedManyResult(embeddings=[], usage=Embeddings([]).usage, model=None, values=[])
    out = _embed(model, values, dimensions, settings)
    return EmbedManyResult(embeddings=out.vectors, usage=out.usage, model=out.model, values=values)


def _embed(
    model: ModelOption, values: list[str], dimensions: int | None, settings: Settings | None
) -> Embeddings:
    resolved = resolve(model, settings)
    if not isinstance(resolved, EmbeddingModel):
        raise ModelCapabilityError(
            f"{resolved.name} cannot embed. Use a provider with an embeddings endpoint, e.g. "
            "model='openai:text-embedding-3-small' (or any OpenAI-compatible server via OPENAI_BASE_URL)."
        )
    if dimensions is not None and dimensions < 1:
        raise ConfigurationError(f"dimensions must be a positive integer, got {dimensions}.")
    out = resolved.embed_texts(values, dimensions=dimensions)
    if len(out.vectors) != len(values):
        raise ModelResponseError(
            f"{resolved.name} returned {len(out.vectors)} embeddings for {len(values)} texts."
        )
    return Embeddings(out.vectors, out.usage, out.model or resolved.name)
