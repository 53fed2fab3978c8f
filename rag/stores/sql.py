"""``SqlVectorStore``: exact (brute-force) vector search over the project's SQL engines.

Runs on PostgreSQL, MySQL/MariaDB and SQLite through SQLAlchemy Core -- no extension, no extra
service. Vectors are normalized once at index time and stored as float32 bytes, so a query is one
matrix-vector product over the namespace. That is exact but linear: a namespace larger than
``max_scan`` is refused with ``NamespaceTooLargeError`` instead of quietly getting slow; a
namespace is the unit of tenancy here, so keep tenants in their own namespaces.

Example::

    store = SqlVectorStore("sqlite:///./.lunora/lunora.db")
    store.upsert([VectorRecord("a#0", [0.1, 0.9], "text", {"tenant": "acme"})], namespace="t1")
    store.query([0.1, 0.9], top_k=5, namespace="t1", filter={"tenant": "acme"})
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import sqlalchemy as sa

from rag.errors import NamespaceTooLargeError
from rag.filters import matches_metadata_filter
from rag.inputs import check_count
from rag.lexical.base import LexicalRecord
from rag.lexical.sql import SqlLexicalStore
from rag.namespaces import store_key
from rag.sql_tables import BLOB, LONG_TEXT, create_table_once, engine_of
from rag.stores.base import StoreCapabilities, VectorHit, VectorRecord
from rag.stores.dimensions import batch_width, check_width, vector_width
from rag.stores.ranking import best_first


def vectors_table(metadata: sa.MetaData, name: str = "rag_vectors") -> sa.Table:
    """The table: one row per chunk, keyed by (namespace, id)."""
    return sa.Table(
        name,
        metadata,
        sa.Column("namespace", sa.String(191), primary_key=True),
        sa.Column("id", sa.String(512), primary_key=True),
        sa.Column("dim", sa.Integer, nullable=False),
        sa.Column("vector", BLOB, nullable=False),
        sa.Column("text", LONG_TEXT, nullable=False),
        sa.Column("metadata", LONG_TEXT, nullable=False),
        mysql_engine="InnoDB",
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
    )


def _normalized(vector: Sequence[float]) -> np.ndarray:
    arr = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(arr))
    return arr / norm if norm > 0 else arr


class SqlVectorStore:
    """A namespaced ``VectorStore`` in one SQL table, scored exactly with numpy (cosine)."""

    capabilities = StoreCapabilities(max_dimensions=16_384, max_metadata_bytes=None, max_top_k=None)

    def __init__(
        self,
        engine: sa.Engine | str,
        *,
        table: str = "rag_vectors",
        max_scan: int = 50_000,
        create: bool = True,
    ) -> None:
        self.engine = engine_of(engine)
        self.max_scan = max_scan
        self.table = vectors_table(sa.MetaData(), table)
        if create:
            create_table_once(self.engine, self.table)
        # The lexical leg: BM25 postings in the same database, kept in step with every write.
        self.lexical = SqlLexicalStore(self.engine, table_prefix=f"{table}_lexical")

    @staticmethod
    def _ns(namespace: str | None) -> str:
        return store_key(namespace)

    def _width(self, conn: sa.Connection, ns: str) -> int | None:
        t = self.table
        found = conn.execute(sa.select(t.c.dim).where(t.c.namespace == ns).limit(1)).scalar()
        return None if found is None else int(found)

    def lexical_query(
        self, text: str, *, top_k: int, namespace: str | None = None, filter: dict[str, Any] | None = None
    ) -> list[VectorHit]:
        """The ``top_k`` best BM25 matches (``rag.lexical.kernel``) admitted by ``filter``."""
        return self.lexical.search(text, top_k=top_k, namespace=namespace, filter=filter)

    def upsert(self, records: Sequence[VectorRecord], *, namespace: str | None = None) -> None:
        """Insert or replace records by id (delete + insert in one transaction: portable upsert)."""
        if not records:
            return
        ns = self._ns(namespace)
        latest = {r.id: r for r in records}  # a batch naming one id twice keeps the last
        rows = [
            {
                "namespace": ns,
                "id": r.id,
                "dim": len(r.vector),
                "vector": _normalized(r.vector).tobytes(),
                "text": r.text,
                "metadata": json.dumps(r.metadata, separators=(",", ":")),
            }
            for r in latest.values()
        ]
        t = self.table
        with self.engine.begin() as conn:
            batch_width(
                [r.vector for r in latest.values()], self._width(conn, ns), f"namespace {namespace!r}"
            )
            for start in range(0, len(rows), 500):
                ids = [row["id"] for row in rows[start : start + 500]]
                conn.execute(t.delete().where(t.c.namespace == ns, t.c.id.in_(ids)))
            conn.execute(t.insert(), rows)
        self.lexical.upsert(
            [LexicalRecord(r.id, r.text, dict(r.metadata)) for r in latest.values()], namespace=namespace
        )

    def delete_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> None:
        """Delete records by id; missing ids are ignored."""
        if not ids:
            return
        t = self.table
        with self.engine.begin() as conn:
            for start in range(0, len(ids), 500):
                chunk = list(ids[start : start + 500])
                conn.execute(t.delete().where(t.c.namespace == self._ns(namespace), t.c.id.in_(chunk)))
        self.lexical.delete_by_ids(ids, namespace=namespace)

    def count(self, *, namespace: str | None = None) -> int:
        """How many records ``namespace`` holds."""
        t = self.table
        stmt = sa.select(sa.func.count()).select_from(t).where(t.c.namespace == self._ns(namespace))
        with self.engine.connect() as conn:
            return int(conn.execute(stmt).scalar_one())

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int,
        namespace: str | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` nearest records in ``namespace`` that match ``filter``, best first.

        Raises ``NamespaceTooLargeError`` when the namespace holds more than ``max_scan`` rows.
        """
        if top_k <= 0:
            return []
        check_count("top_k", top_k, self.capabilities.max_top_k)
        ns = self._ns(namespace)
        t = self.table
        count = sa.select(sa.func.count()).select_from(t).where(t.c.namespace == ns)
        # Metadata is read in the scan only when a filter needs it; text only for the winners.
        cols = [t.c.id, t.c.vector, t.c.metadata] if filter else [t.c.id, t.c.vector]
        with self.engine.connect() as conn:
            size = int(conn.execute(count).scalar_one())
            if size > self.max_scan:
                raise NamespaceTooLargeError(
                    f"namespace {ns!r} holds {size} vectors, over this SqlVectorStore's "
                    f"max_scan={self.max_scan}: exact search reads every vector per query. Split the "
                    "data into smaller namespaces, raise max_scan if the latency is acceptable, or use "
                    "QdrantStore / EdgeStore (HNSW)."
                )
            width = self._width(conn, ns)
            if width is None:
                return []
            check_width(vector_width(vector), width, f"namespace {namespace!r}")
            rows = conn.execute(sa.select(*cols).where(t.c.namespace == ns)).all()
        query = _normalized(vector)
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(r.vector for r in rows), dtype=np.float32).reshape(len(rows), -1)
        scores = matrix @ query

        def admit(n: int) -> bool:
            return matches_metadata_filter(json.loads(rows[n].metadata), filter)

        # Walk best first, parsing metadata only as far as needed: per row, the filter is the
        # expensive part, not the dot product.
        chosen = best_first(scores, [r.id for r in rows], top_k=top_k, admit=admit if filter else None)
        found = {h.id: h for h in self.get_by_ids([rows[i].id for i in chosen], namespace=namespace)}
        return [
            VectorHit(rows[i].id, float(scores[i]), found[rows[i].id].text, found[rows[i].id].metadata)
            for i in chosen
            if rows[i].id in found  # deleted between the scan and the fetch
        ]

    def get_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> list[VectorHit]:
        """Records by id (score 0), in the order given, skipping missing ones."""
        if not ids:
            return []
        t = self.table
        found: dict[str, VectorHit] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(ids), 500):
                chunk = list(ids[start : start + 500])
                stmt = sa.select(t.c.id, t.c.text, t.c.metadata).where(
                    t.c.namespace == self._ns(namespace), t.c.id.in_(chunk)
                )
                for r in conn.execute(stmt):
                    found[r.id] = VectorHit(id=r.id, score=0.0, text=r.text, metadata=json.loads(r.metadata))
        return [found[i] for i in ids if i in found]
