"""MemoryStore / best_first: a filtered query scores every row once, then evaluates the filter in
score order only until ``top_k`` rows match -- exact, stable on ties, and cheap at size."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import rag.stores.memory as memory_module
from rag.filters import matches_metadata_filter
from rag.stores.base import VectorRecord
from rag.stores.memory import MemoryStore, unit
from rag.stores.ranking import best_first

N = 20_000


@pytest.fixture(scope="module")
def corpus() -> tuple[MemoryStore, np.ndarray, list[dict[str, Any]], np.ndarray]:
    rng = np.random.default_rng(3)
    centroids = rng.normal(size=(20, 32))
    labels = rng.integers(0, 20, N)
    vectors = centroids[labels] + rng.normal(scale=0.3, size=(N, 32))
    metas = [{"category": f"c{i % 10}", "rank": i} for i in range(N)]
    store = MemoryStore()
    store.upsert(
        [VectorRecord(f"d{i:05d}", vectors[i].tolist(), "", metas[i]) for i in range(N)], namespace="n"
    )
    queries = centroids[:5] + rng.normal(scale=0.3, size=(5, 32))
    return store, vectors, metas, queries


def exact(
    vectors: np.ndarray, metas: list[dict[str, Any]], q: np.ndarray, flt: dict[str, Any], k: int
) -> list[str]:
    matrix = np.stack([unit(v) for v in vectors])
    scores = matrix @ unit(q)
    keep = [i for i in range(len(metas)) if matches_metadata_filter(metas[i], flt)]
    keep.sort(key=lambda i: (-float(scores[i]), f"d{i:05d}"))
    return [f"d{i:05d}" for i in keep[:k]]


def test_filter_is_evaluated_only_as_deep_as_needed(
    corpus: tuple[MemoryStore, np.ndarray, list[dict[str, Any]], np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _, _, queries = corpus
    calls = 0

    def counting(metadata: Any, flt: Any) -> bool:
        nonlocal calls
        calls += 1
        return matches_metadata_filter(metadata, flt)

    monkeypatch.setattr(memory_module, "matches_metadata_filter", counting)
    hits = store.query(queries[0].tolist(), top_k=10, namespace="n", filter={"category": "c3"})
    assert len(hits) == 10 and all(h.metadata["category"] == "c3" for h in hits)
    assert calls < 1_000, f"the filter ran on {calls} of {N} rows"  # it used to run on every row


@pytest.mark.parametrize(
    "flt",
    [
        {"category": "c3"},
        {"rank": {"$in": [5, 17_000, 19_999]}},  # three rows, anywhere in the ranking
        {"category": "none"},
    ],
)
def test_filtered_walk_is_exact(
    corpus: tuple[MemoryStore, np.ndarray, list[dict[str, Any]], np.ndarray], flt: dict[str, Any]
) -> None:
    store, vectors, metas, queries = corpus
    for q in queries[:2]:
        got = [h.id for h in store.query(q.tolist(), top_k=10, namespace="n", filter=flt)]
        assert got == exact(vectors, metas, q, flt, 10)


def test_ties_are_ordered_by_id_and_taken_whole_at_the_cut() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.5, 0.1, 0.5], dtype=np.float32)
    keys = ["f", "a", "e", "b", "z", "c"]
    assert best_first(scores, keys, top_k=3) == [1, 3, 5]  # a, then the 0.5 tie by key: b, c
    assert best_first(scores, keys, top_k=6, admit=lambda n: keys[n] != "b") == [1, 5, 2, 0, 4]
    assert best_first(scores, keys, top_k=0) == []
