"""Exact top-k over a score vector, walking best first until ``top_k`` rows pass a predicate.

Shared by the brute-force stores (``MemoryStore``, ``SqlVectorStore``): scoring every row is one
matrix product, but a metadata filter is a Python call per row, so the filter is evaluated only in
score order and only as deep as needed. The walk is exact (it can reach every row) and stable: equal
scores are ordered by key, so a query returns the same list every time. Example::

    best_first(matrix @ query, ids, top_k=5, admit=lambda n: rows[n].metadata["org"] == "acme")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

# First pass depth, as a multiple of top_k: a 10%-selective filter finds its top_k in it.
_FIRST_DEPTH = 16


def _ordered(scores: np.ndarray, keys: Sequence[str], depth: int) -> Iterator[int]:
    """Row indexes by (score desc, key), sorted ``depth`` rows at a time (growing 4x), not all at once."""
    total = len(scores)
    done = 0
    while done < total:
        if depth >= total:
            pool = np.arange(total)
        else:
            # Everything at or above the depth-th best score: a tie at the cut is taken whole, so
            # each slice extends the previous one without reordering it.
            cut = np.partition(scores, total - depth)[total - depth]
            pool = np.flatnonzero(scores >= cut)
        ranked = sorted(pool.tolist(), key=lambda n: (-float(scores[n]), keys[n]))
        yield from ranked[done:]
        done = len(ranked)
        depth *= 4


def best_first(
    scores: np.ndarray, keys: Sequence[str], *, top_k: int, admit: Callable[[int], bool] | None = None
) -> list[int]:
    """Indexes of the ``top_k`` best-scoring rows that ``admit`` (all rows when ``None``), best first."""
    if top_k <= 0 or len(scores) == 0:
        return []
    chosen: list[int] = []
    for n in _ordered(scores, keys, top_k if admit is None else top_k * _FIRST_DEPTH):
        if admit is None or admit(n):
            chosen.append(n)
            if len(chosen) == top_k:
                break
    return chosen
