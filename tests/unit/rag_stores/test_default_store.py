"""default_store: the embedded EdgeStore on a fresh machine, the server QdrantStore when configured."""

from __future__ import annotations

from pathlib import Path

from store_contract import vec

from rag.settings import RagSettings as Settings
from rag.stores import default_store
from rag.stores.base import VectorRecord
from rag.stores.qdrant import QdrantStore
from rag.stores.qdrant_edge import EdgeStore


def test_embedded_default_is_an_edge_shard_under_the_data_dir(tmp_path: Path) -> None:
    store = default_store(Settings(data_dir=tmp_path))
    assert isinstance(store, EdgeStore)
    store.upsert([VectorRecord("a#0", vec(1), "hello")], namespace="n")
    assert [h.id for h in store.query(vec(1), top_k=1, namespace="n")] == ["a#0"]
    store.close()
    assert (tmp_path / "vectors" / "lunora_rag").is_dir()
    reopened = default_store(Settings(data_dir=tmp_path))
    assert [h.text for h in reopened.get_by_ids(["a#0"], namespace="n")] == ["hello"]
    assert isinstance(reopened, EdgeStore)
    reopened.close()


def test_server_url_selects_qdrant_store_without_connecting(tmp_path: Path) -> None:
    store = default_store(Settings(data_dir=tmp_path, qdrant_url="http://127.0.0.1:9"), collection="docs")
    assert isinstance(store, QdrantStore)
    assert store.collection == "docs"
    assert not (tmp_path / "vectors").exists()
