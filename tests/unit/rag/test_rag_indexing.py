"""The write side: chunk ids, re-index replace + stale deletion, content hash, batching, limits."""

from __future__ import annotations

import pytest
from rag_helpers import RecordingEmbedder, RecordingStore

from rag import bm25_lexical_store, define_rag, fixed_chunker
from rag.errors import (
    EmbeddingDimensionError,
    MetadataTooLargeError,
    NamespaceRequiredError,
    RagConfigurationError,
    RagInputError,
)
from rag.stores.base import StoreCapabilities


def make(**options):
    embedder = RecordingEmbedder(
        options.pop("dimensions", 64), reject_batches_over=options.pop("reject", None)
    )
    store = RecordingStore(options.pop("capabilities", None))
    rag = define_rag(embedding=embedder, store=store, chunk=fixed_chunker(20, 0), **options)
    return rag, embedder, store


def paragraph(n: int, word: str = "alpha") -> str:
    return "".join(f"{word}{i:02d} xxxxxx yyyy " for i in range(n))  # 20 chars per fixed chunk


def test_chunk_ids_are_deterministic() -> None:
    rag, _, store = make()
    result = rag.index("doc", paragraph(3))
    assert (result.chunks, result.unchanged) == (3, False)
    assert store.ids() == ["doc#0", "doc#1", "doc#2"]
    head = store.get_by_ids(["doc#0"])[0]
    assert head.metadata["_rag_chunks"] == 3 and head.metadata["_rag_source"] == "doc"


def test_reindex_replaces_and_deletes_stale_trailing_chunks() -> None:
    rag, _, store = make(lexical_store=bm25_lexical_store())
    rag.index("doc", paragraph(5))
    result = rag.index("doc", paragraph(2, "gamma"))
    assert (result.chunks, result.deleted) == (2, 3)
    assert store.ids() == ["doc#0", "doc#1"]
    assert all("gamma" in h.text for h in store.get_by_ids(["doc#0", "doc#1"]))
    # the lexical mirror lost the stale chunks too
    assert rag.lexical.search("alpha04", top_k=5) == []
    assert [h.id for h in rag.lexical.search("gamma01", top_k=5)] == ["doc#1"]


def test_unchanged_text_short_circuits_with_zero_embeds_and_writes() -> None:
    rag, embedder, store = make()
    rag.index("doc", paragraph(4), metadata={"title": "T"})
    embeds, writes = len(embedder.calls), store.writes
    result = rag.index("doc", paragraph(4), metadata={"title": "T"})
    assert result.unchanged is True and result.chunks == 4
    assert len(embedder.calls) == embeds and store.writes == writes
    # changed metadata is a change; reindex=True forces a pass even when unchanged
    assert rag.index("doc", paragraph(4), metadata={"title": "U"}).unchanged is False
    assert rag.index("doc", paragraph(4), metadata={"title": "U"}, reindex=True).unchanged is False
    assert len(embedder.calls) == embeds + 2


def test_commit_marker_is_written_last() -> None:
    rag, _, store = make()
    rag.index("doc", paragraph(3))
    assert store.upserts[-1][0] == ["doc#0"]
    assert store.upserts[-2][0] == ["doc#1", "doc#2"]


def test_one_batch_call_per_document_and_identical_chunks_embedded_once() -> None:
    rag, embedder, _ = make()
    same = "same chunk text 20c."
    rag.index("doc", same * 4 + paragraph(2))
    assert len(embedder.calls) == 1
    assert embedder.calls[0].count(same) == 1
    assert len(embedder.calls[0]) == 3


def test_batch_failure_falls_back_to_per_chunk() -> None:
    rag, embedder, store = make(reject=1)
    result = rag.index("doc", paragraph(3))
    assert result.chunks == 3
    assert [len(c) for c in embedder.calls] == [3, 1, 1, 1]
    assert store.ids() == ["doc#0", "doc#1", "doc#2"]


def test_dimension_check_names_the_limit_and_the_escapes() -> None:
    rag, _, store = make(dimensions=64, capabilities=StoreCapabilities(max_dimensions=32))
    with pytest.raises(EmbeddingDimensionError) as err:
        rag.index("doc", paragraph(1))
    message = str(err.value)
    assert "64" in message and "32" in message
    assert "dimensions=32" in message and "max_embedding_dimensions" in message
    assert store.writes == 0
    # the explicit setting wins over the store's own ceiling (here: disables it)
    relaxed, _, _ = make(
        dimensions=64, capabilities=StoreCapabilities(max_dimensions=32), max_embedding_dimensions=False
    )
    assert relaxed.index("doc", paragraph(1)).chunks == 1
    tighter, _, _ = make(dimensions=64, max_embedding_dimensions=16)
    with pytest.raises(EmbeddingDimensionError):
        tighter.retrieve("q")


def test_dimension_check_runs_once_per_bound_rag() -> None:
    rag, _embedder, _ = make(capabilities=StoreCapabilities(max_dimensions=64))
    rag.index("a", paragraph(1))
    assert rag.embedding._checked is True
    assert rag.bind().embedding._checked is False


def test_metadata_budget_is_enforced_at_index_time() -> None:
    rag, _, store = make(capabilities=StoreCapabilities(max_metadata_bytes=120))
    with pytest.raises(MetadataTooLargeError, match="120"):
        rag.index("doc", paragraph(1), metadata={"blob": "é" * 60})
    assert store.upserts == []


def test_model_version_is_folded_into_the_namespace() -> None:
    embedder, store = RecordingEmbedder(), RecordingStore()
    v1 = define_rag(embedding=embedder, store=store, embedding_model_version="m-v1")
    v2 = define_rag(embedding=embedder, store=store, embedding_model_version="m-v2")
    v1.index("doc", "hello world", namespace="t1")
    assert store.ids("t1@m-v1") == ["doc#0"] and store.ids("t1") == []
    assert store.get_by_ids(["doc#0"], namespace="t1@m-v1")[0].metadata["_rag_model_version"] == "m-v1"
    assert v1.retrieve("hello", namespace="t1").chunks
    assert v2.retrieve("hello", namespace="t1").chunks == []  # new version: a fresh, empty partition
    v1.index("doc", "hello world")  # default namespace folds too
    assert store.ids("@m-v1") == ["doc#0"]
    with pytest.raises(RagConfigurationError):
        define_rag(embedding=embedder, store=store, embedding_model_version="bad version!")


def test_require_namespace_turns_a_namespace_less_call_into_an_error() -> None:
    rag, _, _ = make(require_namespace=True)
    with pytest.raises(NamespaceRequiredError, match="namespace"):
        rag.index("doc", "text")
    with pytest.raises(NamespaceRequiredError):
        rag.retrieve("text")
    with pytest.raises(NamespaceRequiredError):
        rag.remove("doc")
    rag.index("doc", "text", namespace="t1")
    assert rag.retrieve("text", namespace="t1").chunks[0].id == "doc#0"


def test_namespaces_are_isolated() -> None:
    rag, _, _ = make()
    rag.index("doc", "tenant one secret", namespace="t1")
    assert rag.retrieve("secret", namespace="t2").chunks == []
    assert rag.retrieve("secret").chunks == []


def test_remove_deletes_every_chunk_and_the_lexical_mirror() -> None:
    rag, _, store = make(lexical_store=bm25_lexical_store())
    rag.index("doc", paragraph(4))
    assert rag.remove("doc") == 4
    assert store.ids() == []
    assert rag.lexical.search("alpha01", top_k=5) == []
    assert rag.remove("doc") == 0


def test_emptied_document_removes_its_chunks() -> None:
    rag, _, store = make()
    rag.index("doc", paragraph(2))
    result = rag.index("doc", "   ")
    assert (result.chunks, result.deleted) == (0, 2)
    assert store.ids() == []


def test_unknown_option_and_bad_importance_are_refused() -> None:
    with pytest.raises(RagConfigurationError, match="unknown option"):
        define_rag(embedding=RecordingEmbedder(), store=RecordingStore(), topK=5)
    rag, _, _ = make()
    with pytest.raises(RagInputError):
        rag.index("doc", "x", importance=2.0)


def test_reserved_metadata_keys_are_refused() -> None:
    rag, _, store = make()
    with pytest.raises(RagInputError, match="_rag_source"):
        rag.index("doc", "x", metadata={"_rag_source": "spoof"})
    assert store.writes == 0
