"""Qdrant stores beyond the contract: persistence, HNSW after optimize, native hybrid (BM25 + RRF)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from store_contract import vec

from rag.stores.base import HybridVectorStore, VectorRecord
from rag.stores.qdrant import QdrantStore
from rag.stores.qdrant_edge import EdgeStore

TEXTS = {
    "r1": "The refund policy allows returns within thirty days.",
    "r2": "Shipping takes five business days to most regions.",
    "r3": "Invoices are emailed on the first day of each month.",
    "r4": "Error code XJ-442 means the card was declined by the bank.",
}


def _records() -> list[VectorRecord]:
    return [
        VectorRecord(k, vec(i), t, {"tenant": "acme" if i % 2 else "zeta"})
        for i, (k, t) in enumerate(TEXTS.items())
    ]


def test_persists_across_reopen(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "e")
    store.upsert(_records(), namespace="docs")
    store.close()
    again = EdgeStore(tmp_path / "e")
    assert [h.id for h in again.query(vec(2), top_k=1, namespace="docs")] == ["r3"]
    assert again.count(namespace="docs") == 4
    again.close()


def test_qdrant_local_mode_persists_across_reopen(tmp_path: Path) -> None:
    store = QdrantStore(path=tmp_path / "q", collection="c")
    store.upsert(_records(), namespace="docs")
    store.close()
    again = QdrantStore(path=tmp_path / "q", collection="c")
    assert [h.id for h in again.query(vec(2), top_k=1, namespace="docs")] == ["r3"]
    again.close()


@pytest.mark.parametrize("kind", ["edge", "qdrant-local"])
def test_hybrid_query_finds_the_exact_keyword(tmp_path: Path, kind: str) -> None:
    store: EdgeStore | QdrantStore = (
        EdgeStore(tmp_path / "e") if kind == "edge" else QdrantStore(path=":memory:")
    )
    assert isinstance(store, HybridVectorStore)
    store.upsert(_records(), namespace="docs")
    # The dense leg points at r1; the lexical leg knows only r4 holds "XJ-442".
    lexical = store.lexical_query("XJ-442 declined", top_k=2, namespace="docs")
    assert lexical[0].id == "r4"
    fused = store.hybrid_query(vec(0), "XJ-442 declined", top_k=2, candidates=4, namespace="docs", rrf_k=60)
    assert {h.id for h in fused} == {"r1", "r4"}
    assert fused[0].score <= 2 / 61 + 1e-6  # an RRF score, not a cosine
    filtered = store.hybrid_query(
        vec(0), "XJ-442", top_k=4, candidates=4, namespace="docs", filter={"tenant": "zeta"}
    )
    assert {h.id for h in filtered} == {"r1", "r3"}
    assert store.hybrid_query(vec(0), "XJ-442", top_k=4, candidates=4, namespace="other") == []
    store.close()


def test_bool_filter_overfetches_past_non_matching_neighbours(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "e")
    rng = np.random.default_rng(0)
    base = np.asarray(vec(0))
    records = []
    for i in range(60):
        v = base + 0.01 * rng.normal(size=base.size) * (i + 1)
        records.append(VectorRecord(f"p{i}", list(v), "t", {"public": i >= 50}))
    store.upsert(records, namespace="n")
    hits = store.query(list(base), top_k=3, namespace="n", filter={"public": True})
    cos = {r.id: float(np.dot(r.vector, base) / np.linalg.norm(r.vector)) for r in records[50:]}
    assert [h.id for h in hits] == sorted(cos, key=lambda k: -cos[k])[:3]
    assert {
        h.id for h in store.query(list(base), top_k=100, namespace="n", filter={"public": {"$ne": True}})
    } == {f"p{i}" for i in range(50)}
    store.close()


def test_optimize_builds_hnsw_and_keeps_results(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    centroids = rng.normal(size=(20, 32))
    data = centroids[rng.integers(0, 20, 3000)] + 0.1 * rng.normal(size=(3000, 32))
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    store = EdgeStore(tmp_path / "e", optimize_after=1000)
    store.upsert(
        [VectorRecord(f"x{i}", list(v), "t", {"g": i % 3}) for i, v in enumerate(data)], namespace="n"
    )
    q = data[7] + 0.05 * rng.normal(size=32)
    exact = np.argsort(-(data @ (q / np.linalg.norm(q))))[:10]
    hits = store.query(list(q), top_k=10, namespace="n")  # optimizes first: 3000 pending >= 1000
    assert store._pending == 0
    assert len({h.id for h in hits} & {f"x{i}" for i in exact}) >= 9
    filtered = store.query(list(q), top_k=5, namespace="n", filter={"g": 1})
    assert all(h.metadata["g"] == 1 for h in filtered) and len(filtered) == 5
    store.close()


def test_second_process_gets_a_named_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    store = EdgeStore(tmp_path / "e")
    store.upsert(_records(), namespace="docs")
    code = (
        "import sys; from rag.stores.qdrant_edge import EdgeStore\n"
        "from rag.errors import VectorStoreLockedError\n"
        f"try:\n    EdgeStore({str(tmp_path / 'e')!r})\nexcept VectorStoreLockedError as e:\n"
        "    print('locked:', e); sys.exit(3)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 3, run.stderr
    assert "LUNORA_QDRANT_URL" in run.stdout
    store.close()


def test_fields_declared_later_are_indexed_on_reopen(tmp_path: Path) -> None:
    first = EdgeStore(tmp_path / "e")
    first.upsert(_records(), namespace="docs")
    first.close()
    again = EdgeStore(tmp_path / "e", indexed_fields={"tenant": "keyword"})
    assert again._shard is not None and "metadata.tenant" in again._shard.info().payload_schema
    assert {h.id for h in again.query(vec(0), top_k=4, namespace="docs", filter={"tenant": "zeta"})} == {
        "r1",
        "r3",
    }
    again.close()


def test_two_stores_on_one_path_in_one_process_share_the_shard(tmp_path: Path) -> None:
    reader = EdgeStore(tmp_path / "e")  # opened while the directory is still empty
    writer = EdgeStore(tmp_path / "e")
    writer.upsert(_records(), namespace="docs")
    assert [h.id for h in reader.query(vec(2), top_k=1, namespace="docs")] == ["r3"]
    writer.close()  # the other handle keeps working
    assert reader.count(namespace="docs") == 4
    reader.close()
    assert EdgeStore(tmp_path / "e").count(namespace="docs") == 4
