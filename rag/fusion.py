"""Reciprocal Rank Fusion: merge several rankings by ``sum(1 / (k + rank))`` (rank from 1).

``k`` defaults to 60 (Cormack et al.), which damps the head of each list so agreement between lists
outweighs one list's top spot. qdrant-client's own fusion uses k = 2; pass ``rrf_k`` explicitly when
comparing. Example::

    reciprocal_rank_fusion([["a", "b"], ["b", "c"]])   # [("b", 0.0325...), ("a", ...), ("c", ...)]
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.errors import RagConfigurationError
from rag.stores.base import VectorHit

DEFAULT_RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], *, k: int = DEFAULT_RRF_K
) -> list[tuple[str, float]]:
    """Fused ``(id, score)`` best first; ties keep first-seen order. A repeated id counts once per list."""
    if k < 0:
        raise RagConfigurationError(f"rrf_k must be >= 0, got {k}")
    scores: dict[str, float] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def fuse_hits(hit_lists: Sequence[Sequence[VectorHit]], *, k: int = DEFAULT_RRF_K) -> list[VectorHit]:
    """RRF over lists of hits; each fused hit keeps the first-seen text/metadata and the fused score."""
    first: dict[str, VectorHit] = {}
    for hits in hit_lists:
        for hit in hits:
            first.setdefault(hit.id, hit)
    fused = reciprocal_rank_fusion([[h.id for h in hits] for hits in hit_lists], k=k)
    return [VectorHit(i, score, first[i].text, first[i].metadata) for i, score in fused]
