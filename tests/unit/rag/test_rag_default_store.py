"""define_rag over the embedded default store (Qdrant engine in-process) and the `lunora rag sync` command."""

from __future__ import annotations

from pathlib import Path

import pytest
from rag_helpers import RecordingEmbedder
from typer.testing import CliRunner

from rag import bm25_lexical_store, define_rag
from rag.defaults import default_vector_store

pytest.importorskip("qdrant_edge")


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LUNORA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LUNORA_QDRANT_URL", raising=False)
    return tmp_path / "data"


@pytest.mark.parametrize("lexical", [False, True], ids=["native-hybrid", "bm25-rrf"])
def test_index_retrieve_rls_and_remove_on_the_default_store(data_dir: Path, lexical: bool) -> None:
    store = default_vector_store("core_test")
    assert type(store).__name__ == "EdgeStore"
    rag = define_rag(
        embedding=RecordingEmbedder(),
        store=store,
        lexical_store=bm25_lexical_store() if lexical else None,
        rls_filter=lambda auth: {"org": auth},
        require_namespace=True,
    )
    rag.index(
        "a", "Error ZX9000 means the upload exceeded the size limit.", metadata={"org": "acme"}, namespace="t"
    )
    rag.index("b", "Error ZX9000 for globex customers only.", metadata={"org": "globex"}, namespace="t")
    rag.index("c", "Invoices are emailed monthly. " * 20, metadata={"org": "acme"}, namespace="t")
    acme = rag.bind(auth="acme")
    hits = acme.retrieve("ZX9000 upload", top_k=3, namespace="t").chunks
    assert hits[0].source_id == "a"
    assert "b" not in {h.source_id for h in hits}
    assert rag.index(
        "a", "Error ZX9000 means the upload exceeded the size limit.", metadata={"org": "acme"}, namespace="t"
    ).unchanged
    rag.remove("a", namespace="t")
    assert "a" not in {h.source_id for h in acme.retrieve("ZX9000 upload", namespace="t").chunks}


def test_lunora_rag_sync_command(data_dir: Path, tmp_path: Path) -> None:
    from lunora_jobs.cli import app

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\n## Keys\n\nRotate API keys every month in the console.")
    (docs / "faq.txt").write_text("Password resets are done from the account page.")
    runner = CliRunner()
    first = runner.invoke(app, ["rag", "sync", str(docs), "--namespace", "n1"])
    assert first.exit_code == 0, first.output
    assert "indexed 2, unchanged 0, skipped 0, pruned 0" in first.output
    (docs / "faq.txt").unlink()
    second = runner.invoke(app, ["rag", "sync", str(docs), "--namespace", "n1"])
    assert second.exit_code == 0, second.output
    assert "indexed 0, unchanged 1, skipped 0, pruned 1" in second.output
    assert list((data_dir / "rag").glob("manifest-*.json"))
