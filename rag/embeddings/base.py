"""The embedding seam: texts in, vectors out, one batch call per document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


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
