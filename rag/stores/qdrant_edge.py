"""``EdgeStore``: Qdrant's Rust engine in-process (``qdrant-edge-py``, beta), persisted in a directory.

The same segment, HNSW, payload-index and Query-API code a Qdrant server runs, without a server:
a query is a function call, not a request. All namespaces share one shard; the namespace is a
tenant payload index. Each point also carries a BM25 sparse vector (Qdrant's own tokenizer, IDF
applied by the engine), so ``hybrid_query`` runs the dense and lexical legs and fuses them with RRF
next to the data -- one call, no Python-side merge.

BM25's IDF is shard-wide by default, as on a Qdrant server; ``namespace_idf=True`` scopes it to the
caller's namespace (another tenant's vocabulary then cannot move the ranking) for ~1 ms a query.
qdrant-edge-py 0.9 matches a Python bool as an integer, so boolean conditions are checked in
Python on an over-fetched candidate set instead of natively.

Bulk loads land in an unindexed (exact, slower) segment; ``optimize()`` builds the HNSW graph.
The store calls it by itself before the first query after ``optimize_after`` pending writes.

Example::

    store = EdgeStore(".lunora/vectors", indexed_fields={"tenant": "keyword"})
    store.upsert(records, namespace="docs")
    store.hybrid_query(vec, "refund policy", top_k=5, candidates=20, namespace="docs")
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from rag.stores.base import StoreCapabilities, VectorHit, VectorRecord
from rag.stores.qdrant_edge_shard import EdgeFilters, acquire_shard, release_shard
from rag.stores.qdrant_filter import needs_metadata_guard, translate
from rag.stores.qdrant_payload import (
    BM25,
    DENSE,
    HAS_META,
    NS_FIELD,
    SPARSE,
    hit_of,
    index_schemas,
    namespace_key,
    payload_of,
    point_id,
    recheck,
)


class EdgeStore:
    """A namespaced ``VectorStore`` (and ``HybridVectorStore``) on an embedded Qdrant shard (cosine)."""

    capabilities = StoreCapabilities(max_dimensions=65_536, max_metadata_bytes=None, max_top_k=None)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        indexed_fields: Mapping[str, str] | Sequence[str] | None = None,
        hnsw_m: int = 16,
        ef_construct: int = 128,
        hnsw_ef: int = 128,
        optimize_after: int = 2_000,
        namespace_idf: bool = False,
        tenant_graphs: bool = False,
    ) -> None:
        self.path = Path(path)
        self.indexed_fields = index_schemas(indexed_fields)
        self.hnsw_ef = hnsw_ef
        self.optimize_after = optimize_after
        self.namespace_idf = namespace_idf
        self.tenant_graphs = tenant_graphs
        self._hnsw = (hnsw_m, ef_construct)
        self._lock = threading.Lock()
        self._pending = 0
        self._shard: qe.EdgeShard | None = acquire_shard(self.path, self.indexed_fields)

    def optimize(self) -> None:
        """Build HNSW / merge segments now (blocking). Call after a bulk load."""
        if self._shard is not None:
            self._shard.optimize()
        self._pending = 0

    def flush(self) -> None:
        """Persist pending writes to disk."""
        if self._shard is not None:
            self._shard.flush()

    def close(self) -> None:
        """Flush and release the shard."""
        if self._shard is not None:
            self._shard.flush()
            self._shard = None
            release_shard(self.path)

    def _current(self) -> qe.EdgeShard | None:
        # Another EdgeStore on this path in this process may have created the shard since.
        if self._shard is None:
            with self._lock:
                if self._shard is None:
                    self._shard = acquire_shard(self.path, self.indexed_fields)
        return self._shard

    def _reader(self) -> qe.EdgeShard | None:
        if self._current() is not None and self._pending >= self.optimize_after:
            with self._lock:
                if self._pending >= self.optimize_after:
                    self.optimize()
        return self._shard

    # -- writes -------------------------------------------------------------------------------

    def upsert(self, records: Sequence[VectorRecord], *, namespace: str | None = None) -> None:
        """Insert or replace records by id (each with its BM25 sparse vector from ``text``)."""
        if not records:
            return
        with self._lock:
            if self._shard is None:
                m, ef = self._hnsw
                self._shard = acquire_shard(
                    self.path,
                    self.indexed_fields,
                    dimensions=len(records[0].vector),
                    m=m,
                    ef_construct=ef,
                    tenant_graphs=self.tenant_graphs,
                )
            shard = self._shard
        assert shard is not None  # acquire_shard creates it when given dimensions
        points = [
            qe.Point(
                id=point_id(namespace, r.id),
                vector={DENSE: [float(x) for x in r.vector], SPARSE: BM25.embed_document(r.text)},
                payload=payload_of(namespace, r),
            )
            for r in records
        ]
        shard.update(qe.UpdateOperation.upsert_points(points))
        self._pending += len(points)

    def delete_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> None:
        """Delete records by id; missing ids are ignored."""
        shard = self._current()
        if ids and shard is not None:
            shard.update(qe.UpdateOperation.delete_points([point_id(namespace, i) for i in ids]))

    # -- reads --------------------------------------------------------------------------------

    def scope_filter(self, namespace: str | None, flt: dict[str, Any] | None) -> tuple[Any, bool] | None:
        """``(native filter, exact)`` for ``namespace`` + ``flt``, or ``None`` when nothing can match."""
        translated = translate(flt, EdgeFilters(), prefix="metadata.")
        if translated.nothing:
            return None
        conds = list(translated.conds)
        ns_cond = qe.FieldCondition(key=NS_FIELD, match=qe.MatchValue(namespace_key(namespace)))
        if needs_metadata_guard(flt):  # a record without metadata never matches a filter
            conds.append(qe.FieldCondition(key=HAS_META, match=qe.MatchValue(1)))
        return qe.Filter(must=[ns_cond, *conds]), translated.exact

    def _run(
        self,
        build: Callable[[Any, int], Any],
        *,
        top_k: int,
        namespace: str | None,
        filter: dict[str, Any] | None,
    ) -> list[VectorHit]:
        """Run ``build(native_filter, limit)``; re-check hits, over-fetching when the filter was widened."""
        shard = self._reader()
        scope = self.scope_filter(namespace, filter)
        if shard is None or scope is None or top_k <= 0:
            return []
        native, exact = scope
        limit = top_k if exact else top_k * 4
        while True:
            raw = shard.query(build(native, limit))
            hits = recheck([hit_of(p.payload, p.score) for p in raw], filter)
            if exact or len(hits) >= top_k or len(raw) < limit:
                return hits[:top_k]
            limit *= 4

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int,
        namespace: str | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` nearest records in ``namespace`` that match ``filter``, best first."""
        dense = [float(x) for x in vector]

        def build(native: Any, limit: int) -> Any:
            return qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest(dense, using=DENSE),
                filter=native,
                with_payload=True,
                params=qe.SearchParams(hnsw_ef=max(self.hnsw_ef, limit)),
            )

        return self._run(build, top_k=top_k, namespace=namespace, filter=filter)

    def lexical_query(
        self, text: str, *, top_k: int, namespace: str | None = None, filter: dict[str, Any] | None = None
    ) -> list[VectorHit]:
        """BM25 (Qdrant's tokenizer, IDF over ``namespace``) hits for ``text``, best first."""
        sparse = BM25.embed_query(text)

        def build(native: Any, limit: int) -> Any:
            return qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest(sparse, using=SPARSE),
                filter=native,
                with_payload=True,
                params=self._sparse_params(namespace),
            )

        return self._run(build, top_k=top_k, namespace=namespace, filter=filter)

    def hybrid_query(
        self,
        vector: Sequence[float],
        text: str,
        *,
        top_k: int,
        candidates: int,
        namespace: str | None = None,
        filter: dict[str, Any] | None = None,
        rrf_k: int = 60,
    ) -> list[VectorHit]:
        """Dense + BM25 legs (``candidates`` each) fused with RRF(``rrf_k``) in the engine, best first."""
        dense = [float(x) for x in vector]
        sparse = BM25.embed_query(text)

        def build(native: Any, limit: int) -> Any:
            pool = max(candidates * limit // top_k, limit)
            legs = [
                qe.Prefetch(
                    limit=pool,
                    query=qe.Query.Nearest(dense, using=DENSE),
                    filter=native,
                    params=qe.SearchParams(hnsw_ef=max(self.hnsw_ef, pool)),
                ),
                qe.Prefetch(
                    limit=pool,
                    query=qe.Query.Nearest(sparse, using=SPARSE),
                    filter=native,
                    params=self._sparse_params(namespace),
                ),
            ]
            fusion: Any = qe.Fusion.Rrf(k=rrf_k)  # the stub types Fusion, not its Rrf variant
            return qe.QueryRequest(limit=limit, prefetches=legs, query=fusion, with_payload=True)

        return self._run(build, top_k=top_k, namespace=namespace, filter=filter)

    def _sparse_params(self, namespace: str | None) -> Any:
        # IDF is shard-wide by default (as on a Qdrant server): scoping it to the namespace costs a
        # statistics pass per query (~1 ms at 100k); namespace_idf=True buys tenant-local IDF.
        if not self.namespace_idf:
            return None
        ns_only = qe.Filter(
            must=[qe.FieldCondition(key=NS_FIELD, match=qe.MatchValue(namespace_key(namespace)))]
        )
        return qe.SearchParams(idf=qe.IdfParams(corpus=ns_only))

    def get_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> list[VectorHit]:
        """Records by id (score 0), in the order given, skipping missing ones."""
        shard = self._current()
        if not ids or shard is None:
            return []
        pids: list[int | uuid.UUID | str] = [point_id(namespace, i) for i in ids]
        found = shard.retrieve(pids, True, False)
        by_id = {str(r.id): hit_of(r.payload, 0.0) for r in found}
        return [by_id[str(p)] for p in pids if str(p) in by_id]

    def count(self, *, namespace: str | None = None) -> int:
        """How many records ``namespace`` holds."""
        shard = self._current()
        if shard is None:
            return 0
        scope = self.scope_filter(namespace, None)
        return 0 if scope is None else int(shard.count(qe.CountRequest(filter=scope[0])))
