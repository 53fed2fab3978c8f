"""The read side of a rag: transform -> embed -> dense (+ lexical) legs -> RRF -> rerank -> trim -> assemble.

Both legs fetch a deeper candidate pool than ``top_k`` (``candidates``, default ``top_k * 4``): the
lexical leg exists to surface a chunk the dense leg ranked below ``top_k``, which it can only do if it
was asked for more. Fusion is Reciprocal Rank Fusion (``rrf_k``, default 60); the reranker sees the
fused pool and its order is final; the result is trimmed to ``top_k`` last.

The (RLS-merged) filter is passed to every leg *and* re-checked on every hit before fusion, so a store
that ignored it still cannot leak a chunk outside the caller's scope.

The lexical leg is the rag's ``lexical_store`` when it has one, else the store's own
``lexical_query`` (every bundled store keeps a BM25 index beside its vectors, scored by the one kernel
in ``rag.lexical.kernel``, so a ranking does not depend on the store). ``mode``: ``"auto"`` is hybrid
whenever a lexical leg exists; ``"hybrid"`` / ``"lexical"`` without one are an error, never a silent
dense-only answer. Both legs go through the same namespace and RLS-merged filter.

``group_by="source"`` ranks documents by their best chunk in the fused (and reranked) order, asking
the legs for a deeper pool (and deepening it while fewer than ``top_k`` documents came back).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.config import RagConfig, RetrieveOptions
from rag.embedding import EmbeddingCalls
from rag.filters import matches_metadata_filter
from rag.fusion import fuse_hits
from rag.indexing import BOOKKEEPING_PREFIX, CHUNK_KEY, IMPORTANCE_KEY, SOURCE_KEY, chunk_id
from rag.inputs import MAX_TOP_K
from rag.stores.base import VectorHit, VectorStore
from rag.transform import TransformContext, transformed_queries


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
class SourceGroup:
    """One document of a ``group_by="source"`` retrieval: its score (its best chunk's) and best chunks."""

    id: str
    score: float
    chunks: list[RetrievedChunk]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    """Ranked ``chunks``, a prompt-ready ``context`` and deduplicated ``sources``; with
    ``group_by="source"``, ``groups`` holds the top documents (``chunks`` is them, flattened)."""

    chunks: list[RetrievedChunk]
    context: str
    sources: list[Source]
    queries: list[str] = field(default_factory=list)
    groups: list[SourceGroup] = field(default_factory=list)


def has_lexical_leg(config: RagConfig) -> bool:
    """Whether ``config`` has a lexical leg: a ``lexical_store``, or a store with ``lexical_query``."""
    return config.lexical_store is not None or callable(getattr(config.store, "lexical_query", None))


def _lexical_search(config: RagConfig) -> Callable[..., list[VectorHit]]:
    if config.lexical_store is not None:
        return config.lexical_store.search
    search: Callable[..., list[VectorHit]] = config.store.lexical_query  # type: ignore[attr-defined]
    return search


def retrieve(
    config: RagConfig,
    embedding: EmbeddingCalls,
    query: str,
    options: RetrieveOptions,
    *,
    conversation_id: str | None = None,
) -> RetrievalResult:
    """Run one retrieval; see ``Rag.retrieve``."""
    store = config.store
    top_k = options.top_k
    ceiling = min(store.capabilities.max_top_k or MAX_TOP_K, MAX_TOP_K)
    grouped = options.group_by == "source"
    # Grouping needs chunks of top_k *distinct* documents: a deeper pool, deepened again if short.
    pool = max(top_k, options.candidates or top_k * (8 if grouped else 4))
    pool = min(pool, ceiling)
    lexical_pool = min(max(pool, config.lexical_top_k or 0), ceiling)
    mode = options.mode
    use_dense = mode != "lexical"
    use_lexical = mode in ("hybrid", "lexical") or (mode == "auto" and has_lexical_leg(config))
    flt = options.filter
    context = TransformContext(conversation_id=conversation_id, namespace=options.namespace)
    queries = transformed_queries(query, options.transform_query, context)
    while True:
        legs: list[list[VectorHit]] = []
        full = False  # some leg came back with as many hits as asked: a deeper pool may find more
        for q in queries:
            if use_dense:
                vector = embedding.embed_query(q)
                dense = store.query(vector, top_k=pool, namespace=options.namespace, filter=flt)
                dense = _admitted(dense, flt)
                full = full or len(dense) >= pool
                if options.min_score is not None:
                    dense = [h for h in dense if h.score >= options.min_score]
                legs.append(dense)
            if use_lexical:
                search = _lexical_search(config)
                found = search(q, top_k=lexical_pool, namespace=options.namespace, filter=flt)
                full = full or len(found) >= lexical_pool
                legs.append(_admitted(found, flt))
        hits = legs[0] if len(legs) == 1 else fuse_hits(legs, k=config.rrf_k)
        hits = _weighted(hits)
        if options.rerank is not None:
            hits = options.rerank(queries[0] if len(queries) == 1 else query, hits)
        if not grouped or not full or pool >= ceiling or len(_sources(hits)) >= top_k:
            break
        pool, lexical_pool = min(pool * 4, ceiling), min(lexical_pool * 4, ceiling)
    if grouped:
        groups = _grouped(hits, top_k, options.chunks_per_source)
        hits = [h for group in groups for h in group]
    else:
        hits = hits[:top_k]
    if config.chunk_context != (0, 0):
        hits = _stitched(store, config.chunk_context, hits, options.namespace)
    return _assemble(hits, queries, grouped)


def _source_of(hit: VectorHit) -> str:
    return str(hit.metadata.get(SOURCE_KEY, hit.id.rsplit("#", 1)[0]))


def _sources(hits: Sequence[VectorHit]) -> set[str]:
    return {_source_of(h) for h in hits}


def _grouped(hits: Sequence[VectorHit], top_k: int, per_source: int) -> list[list[VectorHit]]:
    """The first ``top_k`` sources in rank order of their best chunk, each with its best chunks."""
    groups: dict[str, list[VectorHit]] = {}
    for hit in hits:
        group = groups.get(_source_of(hit))
        if group is None:
            if len(groups) >= top_k:
                continue
            group = groups[_source_of(hit)] = []
        if len(group) < per_source:
            group.append(hit)
    return list(groups.values())


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


def _stitched(
    store: VectorStore, window: tuple[int, int], hits: list[VectorHit], namespace: str | None
) -> list[VectorHit]:
    """ "Embed small, retrieve big": widen each hit's text with its neighbouring chunks."""
    before, after = window
    out = []
    for hit in hits:
        source, n = hit.metadata.get(SOURCE_KEY), hit.metadata.get(CHUNK_KEY)
        if not isinstance(source, str) or not isinstance(n, int):
            out.append(hit)
            continue
        ids = [chunk_id(source, i) for i in range(max(0, n - before), n + after + 1)]
        texts = {h.id: h.text for h in store.get_by_ids(ids, namespace=namespace)}
        texts[hit.id] = hit.text
        out.append(VectorHit(hit.id, hit.score, "\n".join(texts[i] for i in ids if i in texts), hit.metadata))
    return out


def _assemble(hits: Sequence[VectorHit], queries: list[str], grouped: bool) -> RetrievalResult:
    chunks: list[RetrievedChunk] = []
    sources: dict[str, Source] = {}
    members: dict[str, list[RetrievedChunk]] = {}
    for hit in hits:
        source_id = _source_of(hit)
        index = hit.metadata.get(CHUNK_KEY, 0)
        user = {k: v for k, v in hit.metadata.items() if not k.startswith(BOOKKEEPING_PREFIX)}
        chunk = RetrievedChunk(hit.id, source_id, int(index), hit.text, hit.score, user)
        chunks.append(chunk)
        sources.setdefault(source_id, Source(source_id, user))
        members.setdefault(source_id, []).append(chunk)
    context = "\n\n".join(f"[{n}] (source: {c.source_id})\n{c.text}" for n, c in enumerate(chunks, start=1))
    groups = (
        [SourceGroup(sid, group[0].score, group, sources[sid].metadata) for sid, group in members.items()]
        if grouped
        else []
    )
    return RetrievalResult(chunks, context, list(sources.values()), queries, groups)
