"""The embedding seam: texts in, vectors out, with the usage of the call.

A provider's model object implements ``EmbeddingModel`` when its endpoint embeds (``OpenAIModel`` on
``/v1/embeddings``); ``lunora_jobs.ai.embed`` / ``embed_many`` resolve the same ``"provider:model"``
strings as agents and call it.

Example::

    result = resolve_model("openai:text-embedding-3-small").embed_texts(["first", "second"])
    result.vectors          # two lists of floats, in input order
    result.usage            # Usage(input_tokens=..., cost_usd=<provider-reported or None>)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from lunora_jobs.models.base import Usage


@dataclass(frozen=True, slots=True)
class Embeddings:
    """Vectors lined up with the input texts, the usage of producing them and the model that did."""

    vectors: list[list[float]]
    usage: Usage = field(default_factory=Usage)
    model: str | None = None


@runtime_checkable
class EmbeddingModel(Protocol):
    """A model object that can embed texts."""

    name: str

    def embed_texts(self, texts: Sequence[str], *, dimensions: int | None = None) -> Embeddings:
        """Embed ``texts`` (order kept); ``dimensions`` asks for shortened vectors where supported."""
        ...
