"""The lexical-store seam: a keyword index searched alongside the vector store (hybrid retrieval)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rag.stores.base import VectorHit


@dataclass(frozen=True, slots=True)
class LexicalRecord:
    """One chunk to index for keyword search: id, text, and the metadata filters are evaluated on."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class LexicalStore(Protocol):
    """A namespaced keyword index. ``filter`` uses ``rag.filters`` and is applied after scoring, so a
    record the filter excludes never leaves the store (the filter carries the tenant scope)."""

    def upsert(self, records: Sequence[LexicalRecord], *, namespace: str | None = None) -> None:
        """Insert or replace records by id."""
        ...

    def search(
        self,
        query: str,
        *,
        top_k: int,
        namespace: str | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` best BM25 matches, best first (``score`` is the BM25 score)."""
        ...

    def delete_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> None:
        """Delete records by id; missing ids are ignored."""
        ...
