"""Bulk sync builds the store's index once at the end, so the first query does not pay for it."""

from __future__ import annotations

from pathlib import Path

from rag_helpers import RecordingEmbedder, RecordingStore
from rich.console import Console

from rag import define_rag, define_rag_source
from rag.cli import sync_directory
from rag.settings import RagSettings as Settings
from rag.stores.qdrant_edge import EdgeStore


class CountingEdgeStore(EdgeStore):
    """A real ``EdgeStore`` that counts ``optimize`` calls."""

    optimized = 0

    def optimize(self) -> None:
        self.optimized += 1
        super().optimize()


class Folder:
    """An in-memory ``ObjectSource`` of plain-text documents."""

    def __init__(self, docs: dict[str, str]) -> None:
        self.docs = docs

    def list(self) -> list[dict[str, str]]:
        return [{"key": k, "content_type": "text/plain"} for k in self.docs]

    def get(self, obj: object) -> str | None:
        return self.docs.get(getattr(obj, "key", ""))


def test_sync_optimizes_once_after_a_pass_that_wrote(tmp_path: Path) -> None:
    store = CountingEdgeStore(tmp_path / "v", optimize_after=10_000)
    rag = define_rag(embedding=RecordingEmbedder(), store=store)
    ingest = define_rag_source(rag, namespace="n")
    docs = {f"doc{i}": f"Document {i} explains topic {i} in detail." for i in range(5)}

    first = ingest.sync(Folder(docs))
    assert len(first.indexed) == 5
    assert store.optimized == 1 and store._pending == 0  # built now, not on the first query

    again = ingest.sync(Folder(docs), known_keys=docs)
    assert again.unchanged == sorted(docs) and store.optimized == 1  # nothing written: no rebuild

    fewer = {k: v for k, v in docs.items() if k != "doc4"}
    pruned = ingest.sync(Folder(fewer), known_keys=docs)
    assert pruned.pruned == ["doc4"] and store.optimized == 2
    assert [c.source_id for c in rag.retrieve("topic 2", namespace="n", top_k=1).chunks] == ["doc2"]
    store.close()


def test_sync_without_an_optimize_method_still_works() -> None:
    store = RecordingStore()
    assert not hasattr(store, "optimize")
    rag = define_rag(embedding=RecordingEmbedder(), store=store)
    report = define_rag_source(rag).sync(Folder({"a": "Alpha text."}))
    assert report.indexed == ["a"]


def test_cli_sync_optimizes_the_store(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nKeys rotate monthly.")
    (docs / "b.txt").write_text("Passwords need twelve characters.")
    store = CountingEdgeStore(tmp_path / "v", optimize_after=10_000)
    rag = define_rag(embedding=RecordingEmbedder(), store=store)
    settings = Settings(data_dir=tmp_path / "data")
    with open(tmp_path / "out.txt", "w") as out:
        report = sync_directory(docs, settings=settings, rag=rag, console=Console(file=out))
    assert report.indexed == ["a.md", "b.txt"]
    assert store.optimized == 1 and store._pending == 0
    store.close()
