"""The one dimension check every store runs: a vector must be as wide as the space it joins or queries."""

from __future__ import annotations

from collections.abc import Sequence

from rag.errors import DimensionMismatchError, RagInputError


def vector_width(vector: Sequence[float]) -> int:
    """The width of a non-empty vector."""
    width = len(vector)
    if width == 0:
        raise RagInputError("a vector must have at least one dimension")
    return width


def check_width(width: int, expected: int | None, where: str) -> None:
    """Raise ``DimensionMismatchError`` unless ``width`` equals ``expected`` (``None``: no vectors yet)."""
    if expected is not None and width != expected:
        raise DimensionMismatchError(
            f"a {width}-dimension vector does not fit {where}, which holds {expected}-dimension vectors: "
            "vectors of two embedding models cannot be compared. Index the new model into a new index "
            "or namespace (define_rag(embedding_model_version=...)), or re-index everything with one model"
        )


def batch_width(vectors: Sequence[Sequence[float]], expected: int | None, where: str) -> int | None:
    """The common width of ``vectors`` (checked against ``expected`` and each other); None if empty."""
    for vector in vectors:
        width = vector_width(vector)
        check_width(width, expected, where)
        expected = width
    return expected
