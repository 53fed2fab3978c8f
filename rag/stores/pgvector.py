"""``PgVectorStore``: chunks in PostgreSQL with the pgvector extension, searched by an HNSW index.

The table is the seed's ``agent_rag_chunks`` (name configurable): one row per chunk keyed by
``(namespace, id)``, the embedding as ``vector(<dimensions>)`` under an HNSW index (cosine), the
metadata as ``jsonb`` under a GIN index. The dimension is fixed by the first upsert (or
``dimensions=``); a vector of another width is refused with ``DimensionMismatchError``.

A query is scoped to its namespace by the ``WHERE`` clause, never by the metadata filter. It first
asks the HNSW index (``hnsw.ef_search`` raised to the rows wanted). pgvector filters an index scan's
candidates after the walk, so a small namespace inside a large table can come back short; whenever
fewer rows than asked for come back, the same query runs exactly over the namespace's own rows
(found through the primary key), so a result is never missing rows that exist. Filters are checked
with ``rag.filters.matches_metadata_filter`` on every candidate (exact semantics, failing closed);
top-level string equalities are also pushed into SQL as a ``jsonb @>`` containment, which only
narrows the candidates the reference filter would drop anyway.

Needs the ``pgvector`` extra (the ``pgvector`` SQLAlchemy type and psycopg 3), and a server with the
extension available: ``CREATE EXTENSION IF NOT EXISTS vector`` runs on first use unless ``create=False``
(then run ``PgVectorStore.create_statements(dimensions)`` from your migrations).

Example::

    store = PgVectorStore("postgresql://app@db/app")
    store.upsert([VectorRecord("guide#0", vector, "text", {"org": "acme"})], namespace="acme")
    store.query(vector, top_k=5, namespace="acme", filter={"org": "acme"})
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from pgvector.sqlalchemy import VECTOR
from sqlalchemy.dialects import postgresql

from rag.errors import RagConfigurationError
from rag.filters import matches_metadata_filter
from rag.inputs import check_count
from rag.lexical.base import LexicalRecord
from rag.lexical.sql import SqlLexicalStore
from rag.namespaces import store_key
from rag.sql_tables import engine_of
from rag.stores.base import StoreCapabilities, VectorHit, VectorRecord
from rag.stores.dimensions import batch_width, check_width, vector_width

DEFAULT_TABLE = "agent_rag_chunks"
HNSW_MAX_DIMENSIONS = 2000
"""pgvector indexes ``vector`` columns of at most 2,000 dimensions."""
EF_SEARCH_MAX = 1000
"""pgvector's ceiling on ``hnsw.ef_search``: an index walk returns at most this many rows."""
_FILTER_DEPTH = 4
_BATCH = 500


def chunks_table(name: str = DEFAULT_TABLE, dimensions: int | None = None) -> sa.Table:
    """The chunk table (``dimensions`` None: the column type without a width, for reading)."""
    return sa.Table(
        name,
        sa.MetaData(),
        sa.Column("namespace", sa.Text, primary_key=True),
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("embedding", VECTOR(dimensions), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("metadata", postgresql.JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Index(f"{name}_embedding_idx", "embedding", postgresql_using="hnsw",
                 postgresql_ops={"embedding": "vector_cosine_ops"}),
        sa.Index(f"{name}_metadata_idx", "metadata", postgresql_using="gin",
                 postgresql_ops={"metadata": "jsonb_path_ops"}),
    )


class PgVectorStore:
    """A namespaced ``VectorStore`` on PostgreSQL + pgvector (HNSW, cosine)."""

    capabilities = StoreCapabilities(
        max_dimensions=HNSW_MAX_DIMENSIONS, max_metadata_bytes=None, max_top_k=None
    )

    def __init__(
        self,
        engine: sa.Engine | str,
        *,
        table: str = DEFAULT_TABLE,
        dimensions: int | None = None,
        create: bool = True,
    ) -> None:
        self.engine = engine_of(engine)
        if self.engine.dialect.name != "postgresql":
            raise RagConfigurationError(
                f"PgVectorStore needs PostgreSQL with pgvector, not {self.engine.dialect.name}; "
                "use SqlVectorStore for other SQL engines."
            )
        if dimensions is not None and not 1 <= dimensions <= HNSW_MAX_DIMENSIONS:
            raise RagConfigurationError(
                f"dimensions must be between 1 and {HNSW_MAX_DIMENSIONS}, got {dimensions}."
            )
        self.table_name = table
        self.create = create
        self._lock = threading.Lock()
        self._dimensions: int | None = None
        self.table = chunks_table(table)
        if create and dimensions is not None:
            self._ensure(dimensions)
        elif dimensions is not None:
            self._dimensions = self._stored_dimensions()
        # The lexical leg: BM25 postings (rag.lexical.kernel) in the same database, kept in step with
        # every write, so hybrid retrieval ranks here as on every other store.
        self.lexical = SqlLexicalStore(self.engine, table_prefix=f"{table}_lexical")

    @staticmethod
    def create_statements(dimensions: int, table: str = DEFAULT_TABLE) -> list[str]:
        """The DDL ``create=True`` runs, for deployments where only migrations touch the schema."""
        dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
        t = chunks_table(table, dimensions)
        create = str(sa.schema.CreateTable(t, if_not_exists=True).compile(dialect=dialect)).strip()
        indexes = [
            str(sa.schema.CreateIndex(i, if_not_exists=True).compile(dialect=dialect)).strip()
            for i in sorted(t.indexes, key=lambda i: str(i.name))
        ]
        return ["CREATE EXTENSION IF NOT EXISTS vector", create, *indexes]

    @property
    def dimensions(self) -> int | None:
        """The embedding width the table holds (None until the table exists)."""
        if self._dimensions is None:
            self._dimensions = self._stored_dimensions()
        return self._dimensions

    # -- writes -----------------------------------------------------------------------------------
    def upsert(self, records: Sequence[VectorRecord], *, namespace: str | None = None) -> None:
        """Insert or replace records by id (``INSERT ... ON CONFLICT DO UPDATE``)."""
        if not records:
            return
        latest = {r.id: r for r in records}  # one statement may not touch a row twice; the last wins
        ns = store_key(namespace)
        width = batch_width([r.vector for r in latest.values()], self.dimensions, self._where)
        assert width is not None
        if self.dimensions is None and self.create:
            self._ensure(width)
        self._check_width(width)
        rows = [
            {"namespace": ns, "id": r.id, "embedding": list(map(float, r.vector)), "text": r.text,
             "metadata": dict(r.metadata)}
            for r in latest.values()
        ]
        t = self.table
        with self.engine.begin() as conn:
            for start in range(0, len(rows), _BATCH):
                stmt = postgresql.insert(t).values(rows[start : start + _BATCH])
                conn.execute(stmt.on_conflict_do_update(
                    index_elements=[t.c.namespace, t.c.id],
                    set_={"embedding": stmt.excluded.embedding, "text": stmt.excluded.text,
                          "metadata": stmt.excluded.metadata},
                ))
        self.lexical.upsert(
            [LexicalRecord(r.id, r.text, dict(r.metadata)) for r in latest.values()], namespace=namespace
        )

    def delete_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> None:
        """Delete records by id; missing ids are ignored."""
        ns = store_key(namespace)
        if not ids or self.dimensions is None:
            return
        t = self.table
        with self.engine.begin() as conn:
            for start in range(0, len(ids), _BATCH):
                chunk = list(ids[start : start + _BATCH])
                conn.execute(t.delete().where(t.c.namespace == ns, t.c.id.in_(chunk)))
        self.lexical.delete_by_ids(ids, namespace=namespace)

    def lexical_query(
        self, text: str, *, top_k: int, namespace: str | None = None, filter: dict[str, Any] | None = None
    ) -> list[VectorHit]:
        """The ``top_k`` best BM25 matches (``rag.lexical.kernel``) admitted by ``filter``."""
        return self.lexical.search(text, top_k=top_k, namespace=namespace, filter=filter)

    # -- reads ------------------------------------------------------------------------------------
    def get_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> list[VectorHit]:
        """Records by id (score 0), in the order given, skipping missing ones."""
        if not ids or self.dimensions is None:
            return []
        t = self.table
        found: dict[str, VectorHit] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(ids), _BATCH):
                chunk = list(ids[start : start + _BATCH])
                stmt = sa.select(t.c.id, t.c.text, t.c.metadata).where(
                    t.c.namespace == store_key(namespace), t.c.id.in_(chunk)
                )
                for r in conn.execute(stmt):
                    found[r.id] = VectorHit(r.id, 0.0, r.text, dict(r.metadata))
        return [found[i] for i in ids if i in found]

    def count(self, *, namespace: str | None = None) -> int:
        """How many records ``namespace`` holds."""
        if self.dimensions is None:
            return 0
        t = self.table
        stmt = sa.select(sa.func.count()).select_from(t).where(t.c.namespace == store_key(namespace))
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
        """The ``top_k`` nearest records in ``namespace`` that match ``filter``, best first (cosine)."""
        if top_k <= 0:
            return []
        check_count("top_k", top_k, self.capabilities.max_top_k)
        store_key(namespace)
        if self.dimensions is None:
            return []
        self._check_width(vector_width(vector))
        want = top_k * _FILTER_DEPTH if filter else top_k
        with self.engine.begin() as conn:
            if want <= EF_SEARCH_MAX:
                # SET LOCAL takes no bind parameters; ``want`` is an int we computed.
                conn.execute(sa.text(f"SET LOCAL hnsw.ef_search = {max(40, want)}"))
                rows = conn.execute(self._nearest(vector, namespace, filter, want, exact=False)).all()
                hits = _admitted(rows, filter)
                if len(hits) >= top_k:
                    return hits[:top_k]
            while True:  # exact over the namespace's own rows, deeper until enough pass the filter
                rows = conn.execute(self._nearest(vector, namespace, filter, want, exact=True)).all()
                hits = _admitted(rows, filter)
                if len(hits) >= top_k or len(rows) < want:
                    return hits[:top_k]
                want *= _FILTER_DEPTH

    def _nearest(
        self, vector: Sequence[float], namespace: str | None, filter: dict[str, Any] | None, limit: int,
        *, exact: bool,
    ) -> sa.Select[Any]:
        t = self.table
        where = [t.c.namespace == store_key(namespace)]
        contained = _containment(filter)
        if contained:
            where.append(t.c.metadata.contains(contained))
        query = list(map(float, vector))
        if not exact:
            distance = t.c.embedding.cosine_distance(query)
            return (sa.select(t.c.id, t.c.text, t.c.metadata, distance.label("distance"))
                    .where(*where).order_by(distance).limit(limit))
        # A materialized CTE cannot be read through the HNSW index: the namespace's rows come by the
        # primary key and are sorted exactly.
        scoped = sa.select(t.c.id, t.c.text, t.c.metadata, t.c.embedding).where(*where).cte("scoped")
        scoped = scoped.prefix_with("MATERIALIZED")
        distance = scoped.c.embedding.cosine_distance(query)
        return (sa.select(scoped.c.id, scoped.c.text, scoped.c.metadata, distance.label("distance"))
                .order_by(distance, scoped.c.id).limit(limit))

    # -- schema -----------------------------------------------------------------------------------
    def _ensure(self, dimensions: int) -> None:
        with self._lock:
            if self._dimensions is not None:
                return
            stored = self._stored_dimensions()
            if stored is None:
                with self.engine.begin() as conn:
                    # Serialize concurrent creators: CREATE ... IF NOT EXISTS still races in the catalog.
                    lock = sa.text("SELECT pg_advisory_xact_lock(hashtext(:name))")
                    conn.execute(lock, {"name": self.table_name})
                    for statement in self.create_statements(dimensions, self.table_name):
                        conn.execute(sa.text(statement))
                stored = self._stored_dimensions()
            self._dimensions = stored

    def _stored_dimensions(self) -> int | None:
        with self.engine.connect() as conn:
            typmod = conn.execute(
                sa.text(
                    "SELECT a.atttypmod FROM pg_attribute a WHERE a.attrelid = to_regclass(:table) "
                    "AND a.attname = 'embedding' AND NOT a.attisdropped"
                ),
                {"table": self.table_name},
            ).scalar()
        return int(typmod) if typmod is not None and typmod > 0 else None

    def _check_width(self, width: int) -> None:
        stored = self.dimensions
        if stored is None:
            raise RagConfigurationError(
                f"Table {self.table_name!r} does not exist and create=False; create it with "
                "PgVectorStore.create_statements(dimensions) in your migrations."
            )
        check_width(width, stored, self._where)

    @property
    def _where(self) -> str:
        return f"table {self.table_name!r} (one width for every namespace: its HNSW index needs one)"


def _containment(filter: dict[str, Any] | None) -> dict[str, Any]:
    """The part of ``filter`` that ``jsonb @>`` decides exactly: top-level keys equal to a string."""
    if not filter:
        return {}
    return {k: v for k, v in filter.items() if isinstance(v, str) and "." not in k and not k.startswith("$")}


def _admitted(rows: Sequence[Any], filter: dict[str, Any] | None) -> list[VectorHit]:
    hits = [
        VectorHit(r.id, 1.0 - float(r.distance), r.text, dict(r.metadata))
        for r in rows
        if r.distance is not None and matches_metadata_filter(r.metadata, filter)
    ]
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits
