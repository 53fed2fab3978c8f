"""Recording wrappers around the real hashing embedder and memory store, for counting calls."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from rag.embeddings.hashing import HashingEmbedder
from rag.namespaces import store_key
from rag.stores.base import StoreCapabilities, VectorHit, VectorRecord
from rag.stores.memory import MemoryStore


class RecordingEmbedder:
    """A real ``HashingEmbedder`` that records every ``embed_many`` call; can reject batches."""

    def __init__(self, dimensions: int = 64, *, reject_batches_over: int | None = None) -> None:
        self.inner = HashingEmbedder(dimensions)
        self.model = self.inner.model
        self.calls: list[list[str]] = []
        self.reject_batches_over = reject_batches_over

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.reject_batches_over is not None and len(texts) > self.reject_batches_over:
            raise RuntimeError("413: batch too large")
        return self.inner.embed_many(texts)

    @property
    def embedded_texts(self) -> list[str]:
        return [t for call in self.calls for t in call]


class RecordingStore:
    """A real ``MemoryStore`` that records writes and queries."""

    def __init__(self, capabilities: StoreCapabilities | None = None) -> None:
        self.inner = MemoryStore(capabilities)
        self.capabilities = self.inner.capabilities
        self.upserts: list[tuple[list[str], str | None]] = []
        self.deletes: list[tuple[list[str], str | None]] = []
        self.queries: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def upsert(self, records: Sequence[VectorRecord], *, namespace: str | None = None) -> None:
        self.upserts.append(([r.id for r in records], namespace))
        self.inner.upsert(records, namespace=namespace)

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int,
        namespace: str | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[VectorHit]:
        self.queries.append({"top_k": top_k, "namespace": namespace, "filter": filter})
        return self.inner.query(vector, top_k=top_k, namespace=namespace, filter=filter)

    def get_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> list[VectorHit]:
        return self.inner.get_by_ids(ids, namespace=namespace)

    def delete_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> None:
        self.deletes.append((list(ids), namespace))
        self.inner.delete_by_ids(ids, namespace=namespace)

    @property
    def writes(self) -> int:
        return len(self.upserts) + len(self.deletes)

    def ids(self, namespace: str | None = None) -> list[str]:
        space = self.inner._spaces.get(store_key(namespace))
        return sorted(space.rows) if space else []
