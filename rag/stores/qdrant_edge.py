"""``EdgeStore``: Qdrant's Rust engine in-process (``qdrant-edge-py``, beta), persisted in a directory.

The same segment, HNSW, payload-index and Query-API code a Qdrant server runs, without a server:
a query is a function call, not a request. All namespaces share one shard; the namespace is a
tenant payload index. Each point also carries a BM25 sparse vector (``rag.lexical.kernel``'s
document weights, IDF applied by the engine), so ``lexical_query`` ranks as every other store does
and ``hybrid_query`` runs the dense and lexical legs in the engine and fuses them with RRF
(``rag.fusion``, ties broken by chunk id so a query's ranking is reproducible).

BM25's IDF is computed over the caller's namespace (``namespace_idf=True``, the default: another
tenant's vocabulary cannot move the ranking, and the scores equal ``MemoryStore``'s), for ~1 ms a
query at 100k points; ``namespace_idf=False`` makes it shard-wide, as on a Qdrant server.
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
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from rag.errors import DimensionMismatchError
from rag.fusion import fuse_hits
from rag.inputs import MAX_TOP_K, check_count
from rag.stores.base import StoreCapabilities, VectorHit, VectorRecord
from rag.stores.dimensions import check_width
from rag.stores.qdrant_edge_shard import EdgeFilters, acquire_shard, release_shard
from rag.stores.qdrant_payload import (
    DENSE,
    NS_FIELD,
    SPARSE,
    TIE_MARGIN,
    hit_of,
    index_schemas,
    namespace_key,
    payload_of,
    point_id,
    ranked,
    recheck,
    scoped,
    sparse_document,
    sparse_query,
)


@contextmanager
def _dimension_errors() -> Iterator[None]:
    # The engine reports a width mismatch as a bare Exception("Vector dimension error: expected dim:
    # 3, got 2"); every store raises the one named error instead.
    try:
        yield
    except Exception as exc:
        message = str(exc)
        if "dimension error" not in message:
            raise
        found = re.findall(r"\d+", message)
        expected, got = (int(found[0]), int(found[1])) if len(found) >= 2 else (None, 0)
        check_width(got, expected, "this EdgeStore")
        raise DimensionMismatchError(message) from exc


class EdgeStore:
    """A namespaced ``VectorStore`` (and ``HybridVectorStore``) on an embedded Qdrant shard (cosine)."""

    capabilities = StoreCapabilities(max_dimensions=65_536, max_metadata_bytes=None, max_top_k=MAX_TOP_K)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        indexed_fields: Mapping[str, str] | Sequence[str] | None = None,
        hnsw_m: int = 16,
        ef_construct: int = 128,
        hnsw_ef: int = 128,
        optimize_after: int = 2_000,
        namespace_idf: bool = True,
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
                vector={
                    DENSE: [float(x) for x in r.vector],
                    SPARSE: qe.SparseVector(*sparse_document(r.text)),
                },
                payload=payload_of(namespace, r),
            )
            for r in records
        ]
        with _dimension_errors():
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
        return scoped(EdgeFilters(), namespace, flt)

    def _run(
        self,
        legs: Sequence[tuple[Any, str, Callable[[int], Any]]],
        *,
        top_k: int,
        namespace: str | None,
        filter: dict[str, Any] | None,
    ) -> list[list[VectorHit]]:
        """Per leg ``(query vector, vector name, params(n))``: its top ``top_k`` in a stable order (see
        ``ranked``), re-checked, over-fetching when the filter was widened. The legs run as one batch."""
        shard = self._reader()
        scope = self.scope_filter(namespace, filter)
        if shard is None or scope is None or top_k <= 0:
            return [[] for _ in legs]
        check_count("top_k", top_k, self.capabilities.max_top_k)
        native, exact = scope

        def fetch(which: Sequence[int], n: int) -> list[list[VectorHit]]:
            requests = [
                qe.QueryRequest(
                    limit=n,
                    query=qe.Query.Nearest(legs[i][0], using=legs[i][1]),
                    filter=native,
                    with_payload=True,
                    params=legs[i][2](n),
                )
                for i in which
            ]
            with _dimension_errors():
                found = shard.query_batch(qe.QueryBatchRequest(requests))
            return [[hit_of(p.payload, p.score) for p in points] for points in found]

        def fetch_one(i: int, n: int) -> list[VectorHit]:
            return fetch([i], n)[0]

        out: dict[int, list[VectorHit]] = {}
        limit = top_k if exact else top_k * 4
        while len(out) < len(legs):
            pending = [i for i in range(len(legs)) if i not in out]
            for i, first in zip(pending, fetch(pending, limit + TIE_MARGIN), strict=True):
                raw = ranked(partial(fetch_one, i), limit, first)
                hits = recheck(raw, filter)
                if exact or len(hits) >= top_k or len(raw) < limit:
                    out[i] = hits[:top_k]
            limit *= 4
        return [out[i] for i in range(len(legs))]

    def _dense_leg(self, vector: Sequence[float]) -> tuple[Any, str, Callable[[int], Any]]:
        ef = self.hnsw_ef
        return [float(x) for x in vector], DENSE, lambda n: qe.SearchParams(hnsw_ef=max(ef, n))

    def _sparse_leg(self, text: str, namespace: str | None) -> tuple[Any, str, Callable[[int], Any]]:
        params = self._sparse_params(namespace)
        return qe.SparseVector(*sparse_query(text)), SPARSE, lambda n: params

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int,
        namespace: str | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` nearest records in ``namespace`` that match ``filter``, best first."""
        return self._run([self._dense_leg(vector)], top_k=top_k, namespace=namespace, filter=filter)[0]

    def lexical_query(
        self, text: str, *, top_k: int, namespace: str | None = None, filter: dict[str, Any] | None = None
    ) -> list[VectorHit]:
        """BM25 (Qdrant's tokenizer, IDF over ``namespace``) hits for ``text``, best first."""
        legs = [self._sparse_leg(text, namespace)]
        return self._run(legs, top_k=top_k, namespace=namespace, filter=filter)[0]

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
        """Dense + BM25 legs (``candidates`` each, one engine batch) fused with RRF(``rrf_k``), best first.

        The legs are fused here, not by the engine's ``Fusion.Rrf``: the engine ranks equal leg scores
        (common in BM25) by internal point offset, which differs from process to process, so the
        same query on the same data came back in a different order per run. Sorting each leg's ties
        by chunk id makes the fused ranking reproducible for ~0.2 ms more than the engine's fusion.
        """
        legs = [self._dense_leg(vector), self._sparse_leg(text, namespace)]
        ranked_legs = self._run(legs, top_k=max(candidates, top_k), namespace=namespace, filter=filter)
        return fuse_hits(ranked_legs, k=rrf_k)[:top_k]

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
