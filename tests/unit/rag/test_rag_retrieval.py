"""The read side: candidate pools, RRF, rerank, query transformation, RLS on both legs, the cache."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest
from rag_helpers import RecordingEmbedder, RecordingStore

from rag import (
    Bm25LexicalStore,
    batch_reranker,
    bm25_lexical_store,
    define_rag,
    reciprocal_rank_fusion,
    score_reranker,
    sentence_chunker,
)
from rag.errors import RerankerError, TopKTooLargeError
from rag.stores.base import StoreCapabilities, VectorHit

DOCS = {
    "pw": "Reset your password from the account settings page.",
    "key": "Rotate an API key in the developer console.",
    "bill": "Invoices are emailed monthly to the billing contact.",
    "sso": "Single sign-on uses SAML with your identity provider.",
    "tz": "Dates are stored in UTC and shown in the browser time zone.",
    "err": "Error ZX-9000 means the upload exceeded the size limit.",
}


class RecordingLexical(Bm25LexicalStore):
    def __init__(self) -> None:
        super().__init__()
        self.searches: list[dict[str, Any]] = []

    def search(self, query: str, *, top_k: int, namespace: str | None = None, filter=None) -> list[VectorHit]:
        self.searches.append({"query": query, "top_k": top_k, "filter": filter})
        return super().search(query, top_k=top_k, namespace=namespace, filter=filter)


def corpus(**options):
    embedder, store = RecordingEmbedder(), RecordingStore(options.pop("capabilities", None))
    rag = define_rag(embedding=embedder, store=store, chunk=sentence_chunker(200, 0), **options)
    for key, text in DOCS.items():
        rag.index(key, text, metadata={"org": "acme" if key != "err" else "other", "title": key.upper()})
    return rag, embedder, store


def test_result_shape_context_and_deduplicated_sources() -> None:
    rag, _, _ = corpus()
    rag.index("pw2", "Password reset links expire. Password rules need twelve characters.")
    result = rag.retrieve("password reset", top_k=3)
    assert result.chunks[0].source_id in {"pw", "pw2"}
    assert all(c.metadata.keys() <= {"org", "title"} for c in result.chunks)  # bookkeeping stripped
    assert len({s.id for s in result.sources}) == len(result.sources)
    assert result.context.startswith("[1] (source: ")
    assert all(c.text in result.context for c in result.chunks)


def test_both_legs_fetch_a_widened_candidate_pool_and_the_result_is_trimmed() -> None:
    lexical = RecordingLexical()
    rag, _, store = corpus(lexical_store=lexical)
    result = rag.retrieve("password", top_k=2)
    assert store.queries[-1]["top_k"] == 8 and lexical.searches[-1]["top_k"] == 8
    assert len(result.chunks) <= 2
    rag.retrieve("password", top_k=2, candidates=20)
    assert store.queries[-1]["top_k"] == 20 and lexical.searches[-1]["top_k"] == 20


def test_candidate_pool_is_capped_by_the_store_and_top_k_checked() -> None:
    rag, _, store = corpus(capabilities=StoreCapabilities(max_top_k=10))
    rag.retrieve("password", top_k=5)
    assert store.queries[-1]["top_k"] == 10
    with pytest.raises(TopKTooLargeError, match="10"):
        rag.retrieve("password", top_k=11)


class KeywordEmbedder:
    """Dense leg that only understands three topics; lexical terms like ZX-9000 are invisible to it."""

    model = "keyword-topics"
    TOPICS = ("upload", "password", "billing")

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        return [
            [
                1.0 + t.lower().count(topic) * 5 if i == 0 else t.lower().count(topic)
                for i, topic in enumerate(self.TOPICS)
            ]
            for t in texts
        ]


def test_lexical_leg_surfaces_what_dense_ranked_below_top_k() -> None:
    rag = define_rag(
        embedding=KeywordEmbedder(),
        store=RecordingStore(),
        lexical_store=bm25_lexical_store(),
        chunk=sentence_chunker(300, 0),
    )
    dense_only = define_rag(
        embedding=KeywordEmbedder(), store=RecordingStore(), chunk=sentence_chunker(300, 0)
    )
    texts = {f"up{i}": f"Upload guide part {i} about upload speed." for i in range(5)}
    texts["zx"] = "Error ZX9000 when the upload is too large."
    for key, text in texts.items():
        rag.index(key, text)
        dense_only.index(key, text)
    query = "ZX9000 error"
    assert "zx" not in [c.source_id for c in dense_only.retrieve(query, top_k=2).chunks]
    assert rag.retrieve(query, top_k=2).chunks[0].source_id == "zx"


def test_rrf_k_is_configurable_and_changes_the_fusion() -> None:
    first, second = ["a", "x1", "x2", "b"], ["y1", "y2", "y3", "b"]
    assert reciprocal_rank_fusion([first, second], k=0)[0][0] == "a"
    assert reciprocal_rank_fusion([first, second], k=60)[0][0] == "b"
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["a"]], k=10))
    assert fused["a"] == pytest.approx(2 / 11) and fused["b"] == pytest.approx(1 / 12)
    rag, _, _ = corpus(lexical_store=bm25_lexical_store(), rrf_k=10)
    top = rag.retrieve("Rotate an API key in the developer console", top_k=1).chunks[0]
    assert top.source_id == "key" and top.score == pytest.approx(2 / 11)


def test_score_reranker_bounds_concurrency_and_rejects_below_min_score() -> None:
    active, peak, lock = 0, 0, threading.Lock()
    barrier = threading.Barrier(3, timeout=10)

    def score(query: str, text: str) -> float:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        barrier.wait()  # three calls must be in flight together to get past here
        with lock:
            active -= 1
        return 1.0 if "password" in text.lower() else 0.1

    hits = [VectorHit(f"h{i}", 0.0, "password" if i == 7 else "other", {}) for i in range(12)]
    ranked = score_reranker(score, min_score=0.5, concurrency=3)("q", hits)
    assert peak == 3
    assert [h.id for h in ranked] == ["h7"] and ranked[0].score == 1.0


def test_rerank_sees_the_pool_its_order_is_final_and_it_can_be_skipped() -> None:
    seen: list[int] = []

    def score(query: str, text: str) -> float:
        seen.append(1)
        return 1.0 if "UTC" in text else 0.0

    rag, _, _ = corpus(rerank=score_reranker(score))
    result = rag.retrieve("password", top_k=1)
    assert len(seen) > 1  # the whole candidate pool, not just top_k
    assert result.chunks[0].source_id == "tz"
    assert rag.retrieve("password", top_k=1, rerank=False).chunks[0].source_id == "pw"


def test_batch_reranker_refuses_a_score_list_of_the_wrong_length() -> None:
    rerank = batch_reranker(lambda q, texts: [0.5] * (len(texts) - 1))
    with pytest.raises(RerankerError, match="exactly one score per passage"):
        rerank("q", [VectorHit("a", 0, "x", {}), VectorHit("b", 0, "y", {})])
    ok = batch_reranker(lambda q, texts: [len(t) for t in texts], min_score=2)
    assert [h.id for h in ok("q", [VectorHit("a", 0, "x", {}), VectorHit("b", 0, "yyy", {})])] == ["b"]


def test_transform_query_rewrite_multi_query_fallback_and_skip() -> None:
    seen: list[Any] = []

    def transform(query: str, ctx: Any) -> Any:
        seen.append(ctx.conversation_id)
        return {
            "rewrite": "password reset",
            "multi": ["password", "invoices billing"],
            "empty": "",
            "none": None,
            "blank": ["  "],
        }[query]

    rag, _embedder, _ = corpus(transform_query=transform)
    bound = rag.bind(conversation_id="thread-9")
    assert bound.retrieve("rewrite").queries == ["password reset"] and seen[-1] == "thread-9"
    multi = bound.retrieve("multi", top_k=4)
    assert multi.queries == ["password", "invoices billing"]
    assert {"pw", "bill"} <= {c.source_id for c in multi.chunks}
    for unusable in ("empty", "none", "blank"):
        assert bound.retrieve(unusable).queries == [unusable]
    calls = len(seen)
    assert bound.retrieve("multi", transform_query=False).queries == ["multi"]
    assert len(seen) == calls


def test_rls_filter_is_merged_with_rls_keys_winning_and_applied_to_both_legs() -> None:
    lexical = RecordingLexical()
    rag, _, store = corpus(lexical_store=lexical, rls_filter=lambda auth: {"org": auth["org"]})
    acme = rag.bind(auth={"org": "acme"})
    result = acme.retrieve(
        "ZX-9000 upload size limit", filter={"org": "other", "title": {"$ne": "PW"}}, top_k=6
    )
    expected = {"org": "acme", "title": {"$ne": "PW"}}
    assert store.queries[-1]["filter"] == expected and lexical.searches[-1]["filter"] == expected
    assert "err" not in [c.source_id for c in result.chunks]  # the other org's chunk never leaks
    assert "pw" not in [c.source_id for c in result.chunks]
    other = rag.bind(auth={"org": "other"}).retrieve("ZX-9000 upload size limit")
    assert [c.source_id for c in other.chunks] == ["err"]


def test_a_store_that_ignores_the_filter_still_cannot_leak() -> None:
    class LeakyStore(RecordingStore):
        def query(self, vector, *, top_k, namespace=None, filter=None):
            return super().query(vector, top_k=top_k, namespace=namespace, filter=None)

    rag = define_rag(embedding=RecordingEmbedder(), store=LeakyStore(), rls_filter=lambda a: {"org": a})
    rag.index("a", "shared words here", metadata={"org": "a"})
    rag.index("b", "shared words here", metadata={"org": "b"})
    assert [c.source_id for c in rag.bind(auth="a").retrieve("shared words").chunks] == ["a"]


def test_min_score_thresholds_the_dense_leg() -> None:
    rag, _, _ = corpus()
    assert rag.retrieve("password", min_score=0.99).chunks == []
    assert rag.retrieve("password", min_score=0.01).chunks


def test_query_embedding_cache_is_bounded() -> None:
    rag, embedder, _ = corpus(cache_embeddings=2)
    before = len(embedder.calls)
    for q in ["a", "b", "a", "c", "b", "b"]:
        rag.retrieve(q)
    # a, b miss; a hits; c misses (evicts b); b misses (evicts a); b hits
    assert len(embedder.calls) - before == 4
    assert rag.embedding.cached == 2
    assert rag.bind().embedding.cached == 0  # scoped to the bound rag


def test_importance_weights_scores_and_chunk_context_stitches_neighbours() -> None:
    rag, _, _ = corpus(chunk_context=(1, 1))
    rag.index(
        "long",
        "First intro sentence. The password answer lives here. Closing remark follows.",
        importance=1.0,
    )
    rag.index("low", "The password answer lives here.", importance=0.1)
    result = rag.retrieve("The password answer lives here", top_k=2)
    assert result.chunks[0].source_id == "long"
    assert "First intro sentence." in result.chunks[0].text and "Closing remark" in result.chunks[0].text


def test_a_stores_own_lexical_leg_is_used_when_no_lexical_store() -> None:
    class LexicalStore(RecordingStore):
        calls: list[dict[str, Any]] = []

        def lexical_query(self, text, *, top_k, namespace=None, filter=None):
            self.calls.append({"text": text, "top_k": top_k, "filter": filter})
            return self.inner.lexical_query(text, top_k=top_k, namespace=namespace, filter=filter)

    store = LexicalStore()
    rag = define_rag(embedding=RecordingEmbedder(), store=store, rrf_k=60)
    rag.index("a", "hybrid text")
    assert rag.retrieve("hybrid", top_k=2).chunks[0].source_id == "a"
    assert store.calls[-1] == {"text": "hybrid", "top_k": 8, "filter": None}
    off = define_rag(embedding=RecordingEmbedder(), store=store, hybrid=False)
    off.retrieve("hybrid")
    assert len(store.calls) == 1


def test_as_tool_returns_context_and_sources() -> None:
    rag, _, _ = corpus()
    tool = rag.as_tool(name="search_docs", top_k=2)
    assert tool.name == "search_docs" and tool.input_schema["required"] == ["query"]
    out = tool.execute({"query": "rotate api key"}, None)
    assert "developer console" in out["context"]
    assert out["sources"][0]["id"] == "key"


def test_as_tool_on_a_multi_tenant_rag_needs_a_namespace_up_front() -> None:
    from rag.errors import NamespaceRequiredError

    strict = define_rag(embedding=RecordingEmbedder(), store=RecordingStore(), require_namespace=True)
    with pytest.raises(NamespaceRequiredError):
        strict.as_tool()
    strict.index("a", "tenant text", namespace="t1")
    out = strict.as_tool(namespace="t1").execute({"query": "tenant"}, None)
    assert out["sources"] == [{"id": "a", "metadata": {}}]


def test_bad_top_k_is_refused() -> None:
    from rag.errors import RagInputError

    rag, _, _ = corpus()
    with pytest.raises(RagInputError):
        rag.retrieve("x", top_k=0)
    with pytest.raises(RagInputError):
        rag.retrieve("x", candidates=-1)
