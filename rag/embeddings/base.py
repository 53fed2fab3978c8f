"""The embedding seam: texts in, vectors out, one batch call per document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from rag.errors import EmbeddingInputError
from rag.text import normalize_text


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. ``model`` names it for spans and cost; ``dimensions`` may be None
    until the first call."""

    model: str

    # Optional attributes rag.embedding reads with getattr when present:
    #   dimensions: int | None        -- known output width (None until the first call)
    #   last_usage: lunora_jobs.models.base.Usage | None -- tokens (and provider cost) of the last call,
    #                                    used for the embeddings span's cost attribute

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed a batch; the result lines up with ``texts``."""
        ...


def checked_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` normalised for a tokenizer (``rag.text.normalize_text``); a non-str item is refused
    (``EmbeddingInputError``) instead of being embedded as ``str(item)``."""
    if isinstance(texts, str | bytes):
        raise EmbeddingInputError("embed_many takes a list of strings, not one string: wrap it in a list")
    out = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise EmbeddingInputError(f"text #{i} is a {type(text).__name__}, not a str: pass strings only")
        out.append(normalize_text(text))
    return out
