"""``MemoryStore``: exact cosine search over numpy arrays, in process. For tests and small indexes.

Vectors are normalised once at upsert, so a query is one matrix-vector product. Filters are evaluated
with ``rag.filters.matches_metadata_filter`` (fail closed), in score order and only until ``top_k``
rows match. Example::

    store = MemoryStore()
    store.upsert([VectorRecord("a#0", [1.0, 0.0], "hello", {"org": "x"})], namespace="t1")
    store.query([1.0, 0.1], top_k=3, namespace="t1", filter={"org": "x"})
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag.filters import matches_metadata_filter
from rag.inputs import check_count
from rag.lexical.base import LexicalRecord
from rag.lexical.memory import Bm25LexicalStore
from rag.namespaces import store_key
from rag.stores.base import StoreCapabilities, VectorHit, VectorRecord
from rag.stores.dimensions import batch_width, check_width, vector_width
from rag.stores.ranking import best_first


def unit(vector: Sequence[float]) -> np.ndarray:
    """``vector`` as float32 scaled to length 1 (a zero vector stays zero)."""
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


@dataclass
class _Space:
    rows: dict[str, tuple[np.ndarray, str, dict[str, Any]]] = field(default_factory=dict)
    matrix: np.ndarray | None = None
    ids: list[str] = field(default_factory=list)

    def width(self) -> int | None:
        return next(iter(self.rows.values()))[0].shape[0] if self.rows else None


class MemoryStore:
    """An exact in-memory vector store with a BM25 index beside it; no limits unless given
    ``capabilities``."""

    def __init__(self, capabilities: StoreCapabilities | None = None) -> None:
        self.capabilities = capabilities or StoreCapabilities()
        self._spaces: dict[str, _Space] = {}
        self._lexical = Bm25LexicalStore()
        self._lock = threading.Lock()

    def upsert(self, records: Sequence[VectorRecord], *, namespace: str | None = None) -> None:
        """Insert or replace records by id (and their text in the BM25 index)."""
        key = store_key(namespace)
        with self._lock:
            space = self._spaces.get(key) or _Space()
            batch_width([r.vector for r in records], space.width(), f"namespace {namespace!r}")
            self._spaces[key] = space
            for record in records:
                space.rows[record.id] = (unit(record.vector), record.text, dict(record.metadata))
            space.matrix = None
            self._lexical.upsert(
                [LexicalRecord(r.id, r.text, dict(r.metadata)) for r in records], namespace=namespace
            )

    def lexical_query(
        self, text: str, *, top_k: int, namespace: str | None = None, filter: dict[str, Any] | None = None
    ) -> list[VectorHit]:
        """The ``top_k`` best BM25 matches (``rag.lexical.kernel``) admitted by ``filter``."""
        return self._lexical.search(text, top_k=top_k, namespace=namespace, filter=filter)

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int,
        namespace: str | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` most cosine-similar records admitted by ``filter``, best first."""
        key = store_key(namespace)
        with self._lock:
            space = self._spaces.get(key)
            if space is None or not space.rows or top_k <= 0:
                return []
            check_count("top_k", top_k, self.capabilities.max_top_k)
            check_width(vector_width(vector), space.width(), f"namespace {namespace!r}")
            if space.matrix is None:
                space.ids = list(space.rows)
                space.matrix = np.stack([space.rows[i][0] for i in space.ids])
            ids, rows = space.ids, space.rows
            # Score everything (one matrix product), then evaluate the filter best first only as
            # deep as needed: per row, the Python filter costs far more than the dot product.
            scores = space.matrix @ unit(vector)
            admit = None if not filter else (lambda n: matches_metadata_filter(rows[ids[n]][2], filter))
            chosen = best_first(scores, ids, top_k=top_k, admit=admit)
            return [self._hit(space, ids[n], float(scores[n])) for n in chosen]

    def get_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> list[VectorHit]:
        """Records by id (score 0), in the order given, skipping missing ones."""
        with self._lock:
            space = self._spaces.get(store_key(namespace))
            if space is None:
                return []
            return [self._hit(space, i, 0.0) for i in ids if i in space.rows]

    def delete_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> None:
        """Delete records by id; missing ids are ignored."""
        with self._lock:
            space = self._spaces.get(store_key(namespace))
            if space is not None:
                for i in ids:
                    space.rows.pop(i, None)
                space.matrix = None
            self._lexical.delete_by_ids(ids, namespace=namespace)

    def count(self, *, namespace: str | None = None) -> int:
        """How many records ``namespace`` holds."""
        with self._lock:
            space = self._spaces.get(store_key(namespace))
            return len(space.rows) if space else 0

    @staticmethod
    def _hit(space: _Space, record_id: str, score: float) -> VectorHit:
        _, text, metadata = space.rows[record_id]
        return VectorHit(record_id, score, text, dict(metadata))
