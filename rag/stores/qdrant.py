"""``QdrantStore``: the production vector store, on qdrant-client.

One class and one code path for a Qdrant server (``url``, default ``LUNORA_QDRANT_URL``) and for
qdrant-client's local mode (``path=`` a directory, or ``":memory:"``). Every namespace shares one
collection: the namespace is a payload field with a tenant payload index, so a query is always
scoped by a filter the store adds itself. Point ids are ``uuid5(namespace, chunk id)``, so the same
chunk id in two namespaces never collides and an upsert replaces in place. Each point also holds
a BM25 sparse vector of its text (``rag.lexical.kernel``'s document weights; IDF applied by Qdrant
over the caller's namespace), so ``lexical_query`` ranks as every other store does, and
``hybrid_query`` fuses the dense and lexical legs with RRF inside Qdrant in one round trip.

Example::

    store = QdrantStore(path=":memory:", collection="docs", indexed_fields={"tenant": "keyword"})
    store.upsert([VectorRecord("a#0", [0.1, 0.9], "text", {"tenant": "acme"})], namespace="t1")
    store.query([0.1, 0.9], top_k=5, namespace="t1", filter={"tenant": "acme"})

Local mode is pure-Python brute force (payload indexes have no effect there); use it for tests and
small corpora, a server (or ``EdgeStore``) for size.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from qdrant_client import QdrantClient
from qdrant_client import models as qm

from rag.inputs import MAX_TOP_K, check_count
from rag.namespaces import store_key
from rag.settings import RagSettings
from rag.stores.base import StoreCapabilities, VectorHit, VectorRecord
from rag.stores.dimensions import batch_width, check_width, vector_width
from rag.stores.qdrant_payload import (
    DENSE,
    HAS_META,
    NS_FIELD,
    SPARSE,
    hit_of,
    index_schemas,
    payload_of,
    point_id,
    ranked,
    recheck,
    scoped,
    sparse_document,
    sparse_query,
)

_SCHEMAS: dict[str, qm.PayloadSchemaType] = {
    "keyword": qm.PayloadSchemaType.KEYWORD,
    "integer": qm.PayloadSchemaType.INTEGER,
    "float": qm.PayloadSchemaType.FLOAT,
    "bool": qm.PayloadSchemaType.BOOL,
}


class _ClientFilters:
    """``QdrantFilterBuilder`` over ``qdrant_client.models``."""

    def match_value(self, key: str, value: str | int | bool) -> Any:
        return qm.FieldCondition(key=key, match=qm.MatchValue(value=value))

    def value_range(self, key: str, bounds: dict[str, float]) -> Any:
        return qm.FieldCondition(key=key, range=qm.Range(**bounds))

    def filter(self, must: list[Any], should: list[Any], must_not: list[Any]) -> Any:
        return qm.Filter(must=must or None, should=should or None, must_not=must_not or None)


class QdrantStore:
    """A namespaced ``VectorStore`` on a Qdrant server or qdrant-client's local mode (cosine)."""

    capabilities = StoreCapabilities(max_dimensions=65_536, max_metadata_bytes=None, max_top_k=MAX_TOP_K)

    def __init__(
        self,
        url: str | None = None,
        path: str | os.PathLike[str] | None = None,
        collection: str = "lunora_rag",
        client: QdrantClient | None = None,
        *,
        indexed_fields: Mapping[str, str] | Sequence[str] | None = None,
        api_key: str | None = None,
    ) -> None:
        if client is None:
            url = url or (None if path is not None else RagSettings().qdrant_url)
            if url:
                # No version probe at construction: building a store must not block on the network.
                client = QdrantClient(url=url, api_key=api_key, check_compatibility=False)
            elif path is None or str(path) == ":memory:":
                client = QdrantClient(location=":memory:")
            else:
                client = QdrantClient(path=str(path))
        self.client = client
        self.collection = collection
        self.indexed_fields = index_schemas(indexed_fields)
        self._known = False  # the collection exists (checked lazily: no network in __init__)
        self._dims: int | None = None

    # -- writes -------------------------------------------------------------------------------

    def _ready(self) -> bool:
        if not self._known:
            self._known = self.client.collection_exists(self.collection)
        return self._known

    def _width(self) -> int | None:
        """The collection's dense width (read once), or None before the first write."""
        if self._dims is None and self._ready():
            vectors = self.client.get_collection(self.collection).config.params.vectors
            params = vectors.get(DENSE) if isinstance(vectors, Mapping) else vectors
            self._dims = None if params is None else int(params.size)
        return self._dims

    def _ensure_collection(self, dimensions: int) -> None:
        if self._ready():
            check_width(dimensions, self._width(), f"collection {self.collection!r}")
            return
        try:
            self.client.create_collection(
                self.collection,
                vectors_config={DENSE: qm.VectorParams(size=dimensions, distance=qm.Distance.COSINE)},
                sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
            )
        except Exception:
            # Another process may have created it between our check and our create.
            if not self.client.collection_exists(self.collection):
                raise
        with warnings.catch_warnings():
            # Local mode ignores payload indexes and says so; the server needs them. Idempotent.
            warnings.simplefilter("ignore", UserWarning)
            tenant = qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)
            self.client.create_payload_index(self.collection, NS_FIELD, field_schema=tenant)
            self.client.create_payload_index(
                self.collection, HAS_META, field_schema=qm.PayloadSchemaType.INTEGER
            )
            for name, kind in self.indexed_fields.items():
                self.client.create_payload_index(
                    self.collection, f"metadata.{name}", field_schema=_SCHEMAS[kind]
                )
        self._known = True

    def upsert(self, records: Sequence[VectorRecord], *, namespace: str | None = None) -> None:
        """Insert or replace records by id."""
        if not records:
            return
        width = batch_width([r.vector for r in records], None, f"collection {self.collection!r}")
        assert width is not None
        self._ensure_collection(width)
        store_key(namespace)
        points = [
            qm.PointStruct(
                id=point_id(namespace, r.id),
                vector={DENSE: [float(x) for x in r.vector], SPARSE: _sparse(*sparse_document(r.text))},
                payload=payload_of(namespace, r),
            )
            for r in records
        ]
        self.client.upsert(self.collection, points=points, wait=True)

    def delete_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> None:
        """Delete records by id; missing ids are ignored."""
        if not ids or not self._ready():
            return
        selector = qm.PointIdsList(points=[point_id(namespace, i) for i in ids])
        self.client.delete(self.collection, points_selector=selector, wait=True)

    # -- reads --------------------------------------------------------------------------------

    def scope_filter(self, namespace: str | None, flt: dict[str, Any] | None) -> qm.Filter | None:
        """The native filter for ``namespace`` + ``flt``, or ``None`` when nothing can match."""
        scope = scoped(_ClientFilters(), namespace, flt)  # always exact: pydantic expresses every condition
        return None if scope is None else scope[0]

    def _points(
        self, top_k: int, namespace: str | None, flt: dict[str, Any] | None, **request: Any
    ) -> list[VectorHit]:
        """Run ``query_points(**request)`` scoped to ``namespace`` + ``flt``: the top ``top_k`` in a stable
        order (see ``ranked``), re-checked in Python. ``request`` without ``prefetch`` gets the scope
        as its filter; with ``prefetch`` the legs carry it already."""
        scope = self.scope_filter(namespace, flt)
        if scope is None or top_k <= 0 or not self._ready():
            return []
        check_count("top_k", top_k, self.capabilities.max_top_k)
        if "prefetch" not in request:
            request["query_filter"] = scope

        def fetch(n: int) -> list[VectorHit]:
            result = self.client.query_points(self.collection, limit=n, with_payload=True, **request)
            return [hit_of(p.payload or {}, p.score) for p in result.points]

        return recheck(ranked(fetch, top_k), flt)

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int,
        namespace: str | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` nearest records in ``namespace`` that match ``filter``, best first."""
        if self._ready():
            check_width(vector_width(vector), self._width(), f"collection {self.collection!r}")
        return self._points(top_k, namespace, filter, query=[float(x) for x in vector], using=DENSE)

    def lexical_query(
        self, text: str, *, top_k: int, namespace: str | None = None, filter: dict[str, Any] | None = None
    ) -> list[VectorHit]:
        """BM25 hits for ``text`` (``rag.lexical.kernel``; IDF over ``namespace``), best first."""
        return self._points(
            top_k,
            namespace,
            filter,
            query=_sparse(*sparse_query(text)),
            using=SPARSE,
            search_params=self._idf_params(namespace),
        )

    def _idf_params(self, namespace: str | None) -> qm.SearchParams:
        # IDF over the caller's namespace, as the in-Python stores compute it: another tenant's
        # vocabulary must not move this tenant's ranking.
        corpus = self.scope_filter(namespace, None)
        assert corpus is not None  # a namespace-only scope always translates
        return qm.SearchParams(idf=qm.IdfCorpusParams(corpus=corpus))

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
        """Dense + BM25 legs (``candidates`` each) fused with RRF(``rrf_k``) by Qdrant, best first.

        One round trip to a server; ``rrf_k`` is passed explicitly (qdrant-client's default is 2).
        """
        scope = self.scope_filter(namespace, filter)
        if scope is None:
            return []
        if self._ready():
            check_width(vector_width(vector), self._width(), f"collection {self.collection!r}")
        pool = max(candidates, top_k)
        legs = [
            qm.Prefetch(query=[float(x) for x in vector], using=DENSE, filter=scope, limit=pool),
            qm.Prefetch(
                query=_sparse(*sparse_query(text)),
                using=SPARSE,
                filter=scope,
                limit=pool,
                params=self._idf_params(namespace),
            ),
        ]
        return self._points(top_k, namespace, filter, prefetch=legs, query=qm.RrfQuery(rrf=qm.Rrf(k=rrf_k)))

    def get_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> list[VectorHit]:
        """Records by id (score 0), in the order given, skipping missing ones."""
        if not ids or not self._ready():
            return []
        found = self.client.retrieve(
            self.collection, ids=[point_id(namespace, i) for i in ids], with_payload=True
        )
        by_id = {str(p.id): hit_of(p.payload or {}, 0.0) for p in found}
        return [by_id[pid] for pid in (point_id(namespace, i) for i in ids) if pid in by_id]

    def count(self, *, namespace: str | None = None) -> int:
        """How many records ``namespace`` holds."""
        scope = self.scope_filter(namespace, None)
        if not self._ready() or scope is None:
            return 0
        return self.client.count(self.collection, count_filter=scope, exact=True).count

    def close(self) -> None:
        """Release the client (and local mode's folder lock)."""
        self.client.close()


def _sparse(indices: list[int], values: list[float]) -> qm.SparseVector:
    return qm.SparseVector(indices=indices, values=values)
