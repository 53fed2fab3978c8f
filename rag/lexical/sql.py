"""``sql_lexical_store(url)``: a durable BM25 inverted index in SQL (PostgreSQL, MySQL/MariaDB, SQLite).

Two tables, created idempotently: ``<prefix>_docs`` (namespace, id, text, metadata JSON, length) and
``<prefix>_postings`` (namespace, term, doc_id, tf, doc length). A search reads the postings of the
query terms and scores them with the same kernel as ``bm25_lexical_store``, so the two rank
identically; text and metadata are then read for the best-ranked documents only. Example::

    store = sql_lexical_store("postgresql+psycopg://postgres@127.0.0.1:5432/app")
    store.upsert([LexicalRecord("doc#0", "reset your password", {"org": "a"})], namespace="t1")
    store.search("password", top_k=5, namespace="t1", filter={"org": "a"})
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa

from rag.filters import matches_metadata_filter
from rag.lexical.base import LexicalRecord
from rag.lexical.kernel import (
    MAX_TERM_CHARS,
    Bm25Params,
    query_terms,
    ranked,
    score_documents,
    term_frequencies,
)
from rag.namespaces import store_key
from rag.sql_tables import LONG_TEXT, create_table_once, engine_of
from rag.stores.base import VectorHit

_BATCH = 500


def _tables(prefix: str) -> tuple[sa.MetaData, sa.Table, sa.Table]:
    meta = sa.MetaData()
    docs = sa.Table(
        f"{prefix}_docs",
        meta,
        sa.Column("namespace", sa.String(191), primary_key=True),
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column("text", LONG_TEXT, nullable=False),
        sa.Column("metadata", LONG_TEXT, nullable=False),
        sa.Column("length", sa.Integer, nullable=False),
        # Covering index: the per-query count reads it instead of the wide rows.
        sa.Index(f"{prefix}_docs_namespace_length_idx", "namespace", "length"),
        mysql_engine="InnoDB",
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
    )
    postings = sa.Table(
        f"{prefix}_postings",
        meta,
        sa.Column("namespace", sa.String(191), primary_key=True),
        sa.Column("term", sa.String(MAX_TERM_CHARS), primary_key=True),
        sa.Column("doc_id", sa.String(255), primary_key=True),
        sa.Column("tf", sa.Integer, nullable=False),
        sa.Column("dl", sa.Integer, nullable=False),  # the document's length, so a search needs no join
        sa.Index(f"{prefix}_postings_namespace_doc_id_idx", "namespace", "doc_id"),
        mysql_engine="InnoDB",
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
    )
    return meta, docs, postings


def _batches(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _BATCH):
        yield items[start : start + _BATCH]


class SqlLexicalStore:
    """BM25 over an inverted index in SQL; see the module docstring."""

    def __init__(
        self, engine: sa.Engine, *, table_prefix: str = "rag_lexical", params: Bm25Params = Bm25Params()
    ) -> None:
        self.engine = engine
        self.params = params
        self._meta, self.docs, self.postings = _tables(table_prefix)
        self.ensure_tables()

    def ensure_tables(self) -> None:
        """Create both tables if missing; safe when several processes start at once."""
        # Table by table: a racing process may win one CREATE and lose the next.
        for table in self._meta.sorted_tables:
            create_table_once(self.engine, table)

    def upsert(self, records: Sequence[LexicalRecord], *, namespace: str | None = None) -> None:
        """Insert or replace records by id (one transaction)."""
        if not records:
            return
        ns = store_key(namespace)
        doc_rows: list[dict[str, Any]] = []
        posting_rows: list[dict[str, Any]] = []
        for record in {r.id: r for r in records}.values():
            tf, length = term_frequencies(record.text)
            doc_rows.append(
                {
                    "namespace": ns,
                    "id": record.id,
                    "text": record.text,
                    "length": length,
                    "metadata": json.dumps(record.metadata, sort_keys=True, default=str),
                }
            )
            posting_rows.extend(
                {"namespace": ns, "term": t, "doc_id": record.id, "tf": c, "dl": length}
                for t, c in tf.items()
            )
        with self.engine.begin() as conn:
            self._delete(conn, ns, [row["id"] for row in doc_rows])
            self._insert(conn, self.docs, doc_rows)
            self._insert(conn, self.postings, posting_rows)

    def delete_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> None:
        """Delete records by id; missing ids are ignored."""
        with self.engine.begin() as conn:
            self._delete(conn, store_key(namespace), list(ids))

    def get_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> list[VectorHit]:
        """Records by id (score 0), in the order given, skipping missing ones."""
        ns, d = store_key(namespace), self.docs
        found: dict[str, VectorHit] = {}
        with self.engine.connect() as conn:
            for batch in _batches(list(ids)):
                stmt = sa.select(d.c.id, d.c.text, d.c.metadata).where(d.c.namespace == ns, d.c.id.in_(batch))
                for row in conn.execute(stmt):
                    found[row.id] = VectorHit(row.id, 0.0, row.text, json.loads(row.metadata))
        return [found[i] for i in ids if i in found]

    def search(
        self, query: str, *, top_k: int, namespace: str | None = None, filter: dict[str, Any] | None = None
    ) -> list[VectorHit]:
        """The ``top_k`` best BM25 matches in ``namespace`` admitted by ``filter``."""
        terms = query_terms(query)
        if not terms or top_k <= 0:
            return []
        ns = store_key(namespace)
        d, p = self.docs, self.postings
        with self.engine.connect() as conn:
            n_docs = conn.execute(sa.select(sa.func.count()).where(d.c.namespace == ns)).scalar_one()
            rows = conn.execute(
                sa.select(p.c.term, p.c.doc_id, p.c.tf, p.c.dl).where(
                    p.c.namespace == ns, p.c.term.in_(terms)
                )
            ).all()
            postings: dict[str, dict[str, int]] = {}
            lengths: dict[str, int] = {}
            for term, doc_id, tf, length in rows:
                postings.setdefault(term, {})[doc_id] = int(tf)
                lengths[doc_id] = int(length)
            scores = score_documents(
                terms, postings, lengths, n_docs=int(n_docs), params=self.params
            )
            ranking = ranked(scores)
            hits: list[VectorHit] = []
            # Fetch text + metadata in rank order, a batch at a time, until top_k pass the filter.
            for start in range(0, len(ranking), max(top_k, _BATCH) if filter else top_k):
                window = ranking[start : start + (max(top_k, _BATCH) if filter else top_k)]
                found = {
                    row.id: row
                    for row in conn.execute(
                        sa.select(d.c.id, d.c.text, d.c.metadata).where(
                            d.c.namespace == ns, d.c.id.in_([doc_id for doc_id, _ in window])
                        )
                    )
                }
                for doc_id, score in window:
                    row = found.get(doc_id)
                    metadata = json.loads(row.metadata) if row is not None else None
                    if row is not None and matches_metadata_filter(metadata, filter):
                        hits.append(VectorHit(doc_id, score, row.text, metadata or {}))
                        if len(hits) >= top_k:
                            return hits
            return hits

    def _insert(self, conn: sa.Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        if conn.dialect.name != "postgresql":
            # SQLite is in-process and PyMySQL folds an INSERT executemany into multi-row statements.
            conn.execute(table.insert(), rows)
            return
        # psycopg's executemany sends one statement per row (~150 chunks/s of postings measured);
        # COPY streams them in the same transaction instead.
        columns = [c.name for c in table.columns]
        prep = conn.dialect.identifier_preparer
        names = ", ".join(prep.quote(c) for c in columns)
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        with cursor.copy(f"COPY {prep.format_table(table)} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([row[c] for c in columns])

    def _delete(self, conn: sa.Connection, ns: str, ids: list[str]) -> None:
        for batch in _batches(ids):
            conn.execute(
                self.postings.delete().where(
                    self.postings.c.namespace == ns, self.postings.c.doc_id.in_(batch)
                )
            )
            conn.execute(self.docs.delete().where(self.docs.c.namespace == ns, self.docs.c.id.in_(batch)))


def sql_lexical_store(
    url_or_engine: str | sa.Engine, *, table_prefix: str = "rag_lexical", params: Bm25Params = Bm25Params()
) -> SqlLexicalStore:
    """A durable BM25 keyword index in the SQL database at ``url_or_engine`` (tables created if missing)."""
    return SqlLexicalStore(engine_of(url_or_engine), table_prefix=table_prefix, params=params)
