"""What both Qdrant stores write and read: point ids, payload layout, sparse BM25, hit re-check.

Payload of a point: ``ns`` (namespace, tenant-indexed), ``chunk_id``, ``text``, ``metadata`` (the
record's metadata; filters address it as ``metadata.<path>``) and ``has_meta`` (0/1, so a filter
can exclude records indexed without metadata). Sparse vectors are ``rag.lexical.kernel``'s BM25
document weights (the tokenizer and formula of every other store); Qdrant applies the IDF at query
time over the caller's namespace, so the server, local mode and the embedded shard rank the lexical
leg as ``MemoryStore`` and ``SqlVectorStore`` do.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rag.filters import matches_metadata_filter
from rag.lexical import kernel
from rag.namespaces import store_key
from rag.stores.base import VectorHit, VectorRecord
from rag.stores.qdrant_filter import QdrantFilterBuilder, needs_metadata_guard, translate

NS_FIELD = "ns"
ID_FIELD = "chunk_id"
HAS_META = "has_meta"
DENSE = "dense"
SPARSE = "bm25"
_POINT_NS = uuid.UUID("6f1c1f0e-3c55-4a38-9d0a-1a0b5d3e7c21")
# Extra results fetched past a limit so a run of equal scores at the cut is seen whole.
TIE_MARGIN = 8


def namespace_key(namespace: str | None) -> str:
    """The payload value of a namespace (``None`` is the default namespace; its key is reserved)."""
    return store_key(namespace)


def point_id(namespace: str | None, chunk_id: str) -> str:
    """Deterministic point id: uuid5 of namespace + chunk id."""
    return str(uuid.uuid5(_POINT_NS, f"{namespace_key(namespace)}\x00{chunk_id}"))


def index_schemas(fields: Mapping[str, str] | Sequence[str] | None) -> dict[str, str]:
    """Normalize ``indexed_fields``: a list means keyword indexes; values are keyword/integer/float/bool."""
    if fields is None:
        return {}
    if isinstance(fields, Mapping):
        return dict(fields)
    return {name: "keyword" for name in fields}


def payload_of(namespace: str | None, record: VectorRecord) -> dict[str, Any]:
    """The stored payload of one record."""
    return {
        NS_FIELD: namespace_key(namespace),
        ID_FIELD: record.id,
        "text": record.text,
        "metadata": dict(record.metadata),
        HAS_META: 1 if record.metadata else 0,  # an int: qdrant-edge-py matches bools as ints
    }


def sparse_document(text: str) -> tuple[list[int], list[float]]:
    """BM25 document weights of a stored text as (indices, values)."""
    return kernel.sparse_document(text)


def sparse_query(text: str) -> tuple[list[int], list[float]]:
    """BM25 query terms (weight 1 each) as (indices, values)."""
    return kernel.sparse_query(text)


def recheck(hits: list[VectorHit], flt: dict[str, Any] | None) -> list[VectorHit]:
    """Drop hits the Python filter rejects: Qdrant matches an array field if any element does."""
    if not flt:
        return hits
    return [h for h in hits if matches_metadata_filter(h.metadata, flt)]


def hit_of(payload: Mapping[str, Any] | None, score: float) -> VectorHit:
    """A ``VectorHit`` from a stored payload."""
    payload = payload or {}
    return VectorHit(
        id=str(payload.get(ID_FIELD, "")),
        score=float(score),
        text=str(payload.get("text", "")),
        metadata=dict(payload.get("metadata") or {}),
    )


def ranked(
    fetch: Callable[[int], list[VectorHit]], limit: int, first: list[VectorHit] | None = None
) -> list[VectorHit]:
    """The best ``limit`` hits of ``fetch(n)`` (the engine's top ``n``) in a stable order.

    Qdrant orders equal scores arbitrarily -- the embedded engine differently from call to call --
    and RRF makes ties common (rank r in one leg only scores the same for every leg). So hits are
    sorted by (score desc, chunk id) and fetched past ``limit`` until the cut falls between two
    different scores: the same query on the same data always returns the same ids. ``first``, if
    given, is ``fetch(limit + TIE_MARGIN)`` already run (e.g. in a batch).
    """
    n = limit + TIE_MARGIN
    hits = fetch(n) if first is None else first
    while True:
        hits = sorted(hits, key=lambda h: (-h.score, h.id))
        if len(hits) < n or len(hits) <= limit or hits[limit - 1].score > hits[-1].score:
            return hits[:limit]
        n *= 2
        hits = fetch(n)


def scoped(
    builder: QdrantFilterBuilder[Any], namespace: str | None, flt: Mapping[str, Any] | None
) -> tuple[Any, bool] | None:
    """``(native filter, exact)`` for ``namespace`` + ``flt`` in ``builder``'s binding, or ``None`` when
    nothing can match. ``exact`` is False when a condition was left out (over-fetch and re-check)."""
    translated = translate(flt, builder, prefix="metadata.")
    if translated.nothing:
        return None
    conds = [builder.match_value(NS_FIELD, namespace_key(namespace)), *translated.conds]
    if needs_metadata_guard(flt):  # a record without metadata never matches a filter
        conds.append(builder.match_value(HAS_META, 1))
    return builder.filter([c for c in conds if c is not None], [], []), translated.exact
