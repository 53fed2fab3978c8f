"""The vector-store seam. Each backend is a small class behind ``VectorStore`` and declares its limits.

``define_rag`` reads ``capabilities`` instead of hard-coding one product's ceilings, so a backend
without a dimension cap is not held to another's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class StoreCapabilities:
    """A backend's limits. ``None`` means no limit."""

    max_dimensions: int | None = None
    max_metadata_bytes: int | None = None
    max_top_k: int | None = None


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """One chunk to upsert: its id (``<source_id>#<n>``), vector, text and metadata."""

    id: str
    vector: Sequence[float]
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One result of a query, best first. ``score`` is cosine similarity (higher is closer)."""

    id: str
    score: float
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class VectorStore(Protocol):
    """A namespaced vector index. ``filter`` uses the metadata-filter language of ``rag.filters``."""

    capabilities: StoreCapabilities

    def upsert(self, records: Sequence[VectorRecord], *, namespace: str | None = None) -> None:
        """Insert or replace records by id."""
        ...

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int,
        namespace: str | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` nearest records in ``namespace`` that match ``filter``, best first."""
        ...

    def get_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> list[VectorHit]:
        """Records by id (score 0), in the order given, skipping missing ones."""
        ...

    def delete_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> None:
        """Delete records by id; missing ids are ignored."""
        ...


@runtime_checkable
class HybridVectorStore(VectorStore, Protocol):
    """Optional: a store that runs dense + lexical (sparse) retrieval and fuses them itself.

    ``define_rag`` uses it when no ``lexical_store`` is given and the store has this method (for
    Qdrant: sparse vectors + the Query API's RRF, computed next to the data in one round trip). The
    store derives its sparse vectors from ``VectorRecord.text`` at upsert; ``rrf_k`` is the RRF
    constant the caller wants (60 by default in ``define_rag`` -- pass it through rather than relying on
    a client default: qdrant-client's is 2). ``candidates`` is each leg's pool size before fusion.
    The result is the fused top ``top_k``, best first; ``VectorHit.score`` is the fused score.
    """

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
        """Fused dense + lexical hits in ``namespace`` matching ``filter``, best first."""
        ...


# Notes for store authors (read by rag.define):
# - namespace ``None`` is the default namespace; it must never see records of a named namespace.
# - ``filter`` is the language of ``rag.filters.matches_metadata_filter``; translate it to a native
#   filter where you can, otherwise evaluate that function per record -- it fails closed.
# - rag.define stores its bookkeeping in metadata under keys starting with ``_rag_`` (source id,
#   chunk index, content hash, chunk count, model version); store them like any other key.
