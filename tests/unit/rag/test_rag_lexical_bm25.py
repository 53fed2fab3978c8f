"""The BM25 kernel and the in-memory lexical store."""

from __future__ import annotations

import math

import pytest

from rag.lexical import LexicalRecord, bm25_lexical_store, tokenize
from rag.lexical.kernel import Bm25Params, idf, score_documents


def test_tokenize_is_casefolded_unicode_words_capped() -> None:
    assert tokenize("Hello, WORLD! Grüße ZX-9000") == ["hello", "world", "grüsse", "zx", "9000"]
    assert tokenize("x" * 100) == ["x" * 64]


def test_score_matches_the_okapi_formula() -> None:
    postings = {"cat": {"a": 2, "b": 1}, "dog": {"b": 3}}
    lengths = {"a": 4, "b": 8}
    # The reference length is a parameter (fixed, so Qdrant's stored sparse weights can match it).
    scores = score_documents(["cat", "dog", "cat"], postings, lengths, n_docs=3, params=Bm25Params(avgdl=6.0))
    avgdl, k1, b = 6.0, 1.2, 0.75

    def term(tf: int, df: int, dl: int) -> float:
        return idf(3, df) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

    assert scores["a"] == pytest.approx(term(2, 2, 4))
    assert scores["b"] == pytest.approx(term(1, 2, 8) + term(3, 1, 8))
    assert idf(3, 1) == pytest.approx(math.log(1 + 2.5 / 1.5))


def test_store_ranks_upserts_replaces_deletes_and_filters() -> None:
    store = bm25_lexical_store()
    store.upsert(
        [
            LexicalRecord("a", "the quick brown fox", {"org": "x"}),
            LexicalRecord("b", "the lazy dog sleeps", {"org": "y"}),
            LexicalRecord("c", "quick quick quick fox jumps", {"org": "x"}),
        ],
        namespace="n",
    )
    assert [h.id for h in store.search("quick fox", top_k=5, namespace="n")] == ["c", "a"]
    assert store.search("quick fox", top_k=5) == []  # other namespace
    assert [h.id for h in store.search("quick dog", top_k=5, namespace="n", filter={"org": "y"})] == ["b"]
    assert store.search("quick", top_k=5, namespace="n", filter={"org": {"$bogus": 1}}) == []
    store.upsert([LexicalRecord("c", "nothing relevant", {"org": "x"})], namespace="n")
    assert [h.id for h in store.search("quick fox", top_k=5, namespace="n")] == ["a"]
    store.delete_by_ids(["a", "missing"], namespace="n")
    assert store.search("quick fox", top_k=5, namespace="n") == []
    hit = store.search("lazy", top_k=1, namespace="n")[0]
    assert (hit.text, hit.metadata) == ("the lazy dog sleeps", {"org": "y"})
