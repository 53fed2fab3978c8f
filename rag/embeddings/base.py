"""The embedding seam: texts in, vectors out, one batch call per document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. ``model`` names it for spans and cost; ``dimensions`` may be None
    until the first call."""

    model: str

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed a batch; the result lines up with ``texts``."""
        ...
