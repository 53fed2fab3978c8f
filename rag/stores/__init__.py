"""Vector stores behind one protocol (``rag.stores.base.VectorStore``).

Backends import lazily so a missing optional extra (``qdrant``, ``pgvector``) fails only when that store
is used.

Example::

    from rag.stores import EdgeStore, PgVectorStore, QdrantStore, SqlVectorStore, default_store
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rag.stores.base import HybridVectorStore, StoreCapabilities, VectorHit, VectorRecord, VectorStore

if TYPE_CHECKING:
    from rag.stores.default import default_store
    from rag.stores.memory import MemoryStore
    from rag.stores.pgvector import PgVectorStore
    from rag.stores.qdrant import QdrantStore
    from rag.stores.qdrant_edge import EdgeStore
    from rag.stores.sql import SqlVectorStore

_LAZY = {
    "QdrantStore": "rag.stores.qdrant",
    "EdgeStore": "rag.stores.qdrant_edge",
    "SqlVectorStore": "rag.stores.sql",
    "MemoryStore": "rag.stores.memory",
    "PgVectorStore": "rag.stores.pgvector",
    "default_store": "rag.stores.default",
}

__all__ = [
    "EdgeStore",
    "HybridVectorStore",
    "MemoryStore",
    "PgVectorStore",
    "QdrantStore",
    "SqlVectorStore",
    "StoreCapabilities",
    "VectorHit",
    "VectorRecord",
    "VectorStore",
    "default_store",
]


def __getattr__(name: str) -> Any:
    """Import a backend on first use (PEP 562)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rag.stores' has no attribute {name!r}")
