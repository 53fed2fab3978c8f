"""Rerankers: reorder (and optionally reject) the fused candidate pool with a query-aware scorer.

The scorer is injected -- a cross-encoder, a hosted rerank endpoint, an LLM -- so this package takes no
provider dependency. A reranker's output order is final; ``define_rag`` trims it to ``top_k`` after.

Example::

    rerank = score_reranker(lambda q, text: encoder.predict([(q, text)])[0], min_score=0.2, concurrency=8)
    rerank = batch_reranker(lambda q, texts: client.rerank(q, texts).scores)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from rag.errors import RagConfigurationError, RerankerError
from rag.stores.base import VectorHit

ScoreFn = Callable[[str, str], float]
BatchScoreFn = Callable[[str, Sequence[str]], Sequence[float]]


class Reranker(Protocol):
    """Takes the query and the candidate pool, returns the hits to keep, best first (score replaced)."""

    def __call__(self, query: str, hits: Sequence[VectorHit]) -> list[VectorHit]:
        """Rerank ``hits`` for ``query``."""
        ...


def _ordered(hits: Sequence[VectorHit], scores: Sequence[float], min_score: float | None) -> list[VectorHit]:
    rescored = [VectorHit(h.id, float(s), h.text, h.metadata) for h, s in zip(hits, scores, strict=True)]
    if min_score is not None:
        rescored = [h for h in rescored if h.score >= min_score]
    return sorted(rescored, key=lambda h: -h.score)  # stable: equal scores keep fusion order


def score_reranker(score: ScoreFn, *, min_score: float | None = None, concurrency: int = 4) -> Reranker:
    """Call ``score(query, text)`` once per candidate, at most ``concurrency`` at a time.

    Candidates scoring below ``min_score`` are rejected, not only reordered.
    """
    if concurrency < 1:
        raise RagConfigurationError(f"score_reranker concurrency must be >= 1, got {concurrency}")

    def rerank(query: str, hits: Sequence[VectorHit]) -> list[VectorHit]:
        if not hits:
            return []
        with ThreadPoolExecutor(max_workers=min(concurrency, len(hits)), thread_name_prefix="rerank") as pool:
            scores = list(pool.map(lambda h: score(query, h.text), hits))
        return _ordered(hits, scores, min_score)

    return rerank


def batch_reranker(score_batch: BatchScoreFn, *, min_score: float | None = None) -> Reranker:
    """Hand the whole pool to ``score_batch(query, texts)`` in one call.

    A score list whose length differs from the passages is refused (``RerankerError``) rather than
    zipped onto the wrong passages.
    """

    def rerank(query: str, hits: Sequence[VectorHit]) -> list[VectorHit]:
        if not hits:
            return []
        scores = list(score_batch(query, [h.text for h in hits]))
        if len(scores) != len(hits):
            raise RerankerError(
                f"batch reranker returned {len(scores)} scores for {len(hits)} passages; "
                "it must return exactly one score per passage, in order"
            )
        return _ordered(hits, scores, min_score)

    return rerank
