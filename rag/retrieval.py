"""The read side of a rag: transform -> embed -> dense (+ lexical) legs -> RRF -> rerank -> trim -> assemble.

Both legs fetch a deeper candidate pool than ``top_k`` (``candidates``, default ``top_k * 4``): the
lexical leg exists to surface a chunk the dense leg ranked below ``top_k``, which it can only do if it
was asked for more. Fusion is Reciprocal Rank Fusion (``rrf_k``, default 60); the reranker sees the
fused pool and its order is final; the result is trimmed to ``top_k`` last.

The (RLS-merged) filter is passed to every leg *and* re-checked on every hit before fusion, so a store
that ignored it still cannot leak a chunk outside the caller's scope.

When no ``lexical_store`` is given and the store offers ``hybrid_query`` (the Qdrant stores: sparse
BM25 vectors + the Query API's RRF), the store runs both legs and the fusion itself. That is preferred
because the lexical index then lives with the vectors (durable, no second store to keep in sync or
re-fill after a restart), both legs are filtered by the same payload index inside the engine, and a
query is one call instead of two plus a Python merge. ``rrf_k`` is passed through, so the fusion
constant is ours (60), not the client's default (2). ``hybrid=False`` opts out (dense only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lunora_jobs.errors import TopKTooLargeError
from rag.filters import matches_metadata_filter
from rag.fusion import fuse_hits
from rag.indexing import BOOKKEEPING_PREFIX, CHUNK_KEY, IMPORTANCE_KEY, SOURCE_KEY, chunk_id
from rag.stores.base import VectorHit
from rag.transform import TransformContext, transformed_queries

if TYPE_CHECKING:
    from rag.config import RetrieveOptions
    from rag.define import Rag


@dataclass(frozen=True, slots=True)
class RetrievedChunk:
    """One ranked chunk. ``metadata`` is the caller's metadata (bookkeeping keys removed)."""

    id: str
    source_id: str
    index: int
    text: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Source:
    """A distinct source among the chunks, in rank order of its best chunk."""

    id: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    """Ranked ``chunks``, a prompt-ready ``context`` and deduplicated ``sources``."""

    chunks: list[RetrievedChunk]
    context: str
    sources: list[Source]
    queries: list[str] = field(default_factory=list)


def retrieve(rag: Rag, query: str, options: RetrieveOptions) -> RetrievalResult:
    """Run one retrieval; see ``Rag.retrieve``."""
    cfg, store = rag.config, rag.store
    top_k = options.top_k or cfg.top_k
    ceiling = store.capabilities.max_top_k
    if ceiling is not None and top_k > ceiling:
        raise TopKTooLargeError(f"top_k={top_k} exceeds this store's maximum of {ceiling}; ask for fewer")
    pool = max(top_k, options.candidates or cfg.candidates or top_k * 4)
    pool = min(pool, ceiling) if ceiling is not None else pool
    lexical_pool = max(pool, cfg.lexical_top_k or 0)
    flt = options.filter
    context = TransformContext(conversation_id=rag.conversation_id, namespace=options.namespace)
    queries = transformed_queries(query, options.transform_query, context)
    native = rag.lexical is None and cfg.hybrid is not False and hasattr(store, "hybrid_query")
    legs: list[list[VectorHit]] = []
    for q in queries:
        vector = rag.embedding.embed_query(q)
        if native:
            hits = store.hybrid_query(  # type: ignore[attr-defined]
                vector,
                q,
                top_k=pool,
                candidates=pool,
                namespace=options.namespace,
                filter=flt,
                rrf_k=cfg.rrf_k,
            )
            legs.append(_admitted(hits, flt))
            continue
        dense = _admitted(store.query(vector, top_k=pool, namespace=options.namespace, filter=flt), flt)
        if options.min_score is not None:
            dense = [h for h in dense if h.score >= options.min_score]
        legs.append(dense)
        if rag.lexical is not None:
            found = rag.lexical.search(q, top_k=lexical_pool, namespace=options.namespace, filter=flt)
            legs.append(_admitted(found, flt))
    hits = legs[0] if len(legs) == 1 else fuse_hits(legs, k=cfg.rrf_k)
    hits = _weighted(hits)
    if options.rerank is not None:
        hits = options.rerank(queries[0] if len(queries) == 1 else query, hits)
    hits = hits[:top_k]
    if cfg.chunk_context != (0, 0):
        hits = _stitched(rag, hits, options.namespace)
    return _assemble(hits, queries)


def _admitted(hits: Sequence[VectorHit], flt: dict[str, Any] | None) -> list[VectorHit]:
    return [h for h in hits if matches_metadata_filter(h.metadata, flt)] if flt else list(hits)


def _weighted(hits: list[VectorHit]) -> list[VectorHit]:
    # Per-source importance (0..1) multiplies into the score; without any, order is untouched.
    if not any(IMPORTANCE_KEY in h.metadata for h in hits):
        return hits
    weighted = [
        VectorHit(h.id, h.score * float(h.metadata.get(IMPORTANCE_KEY, 1.0)), h.text, h.metadata)
        for h in hits
    ]
    return sorted(weighted, key=lambda h: -h.score)


def _stitched(rag: Rag, hits: list[VectorHit], namespace: str | None) -> list[VectorHit]:
    """ "Embed small, retrieve big": widen each hit's text with its neighbouring chunks."""
    before, after = rag.config.chunk_context
    out = []
    for hit in hits:
        source, n = hit.metadata.get(SOURCE_KEY), hit.metadata.get(CHUNK_KEY)
        if not isinstance(source, str) or not isinstance(n, int):
            out.append(hit)
            continue
        ids = [chunk_id(source, i) for i in range(max(0, n - before), n + after + 1)]
        texts = {h.id: h.text for h in rag.store.get_by_ids(ids, namespace=namespace)}
        texts[hit.id] = hit.text
        out.append(VectorHit(hit.id, hit.score, "\n".join(texts[i] for i in ids if i in texts), hit.metadata))
    return out


def _assemble(hits: Sequence[VectorHit], queries: list[str]) -> RetrievalResult:
    chunks: list[RetrievedChunk] = []
    sources: dict[str, Source] = {}
    for hit in hits:
        source_id = str(hit.metadata.get(SOURCE_KEY, hit.id.rsplit("#", 1)[0]))
        index = hit.metadata.get(CHUNK_KEY, 0)
        user = {k: v for k, v in hit.metadata.items() if not k.startswith(BOOKKEEPING_PREFIX)}
        chunks.append(RetrievedChunk(hit.id, source_id, int(index), hit.text, hit.score, user))
        sources.setdefault(source_id, Source(source_id, user))
    context = "\n\n".join(f"[{n}] (source: {c.source_id})\n{c.text}" for n, c in enumerate(chunks, start=1))
    return RetrievalResult(chunks, context, list(sources.values()), queries)
