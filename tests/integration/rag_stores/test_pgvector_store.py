"""PgVectorStore for real: the store contract, the HNSW path and its exact fallback, on PostgreSQL 16 +
pgvector (the pgserver wheel's server, started privately for this module)."""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from suite_settings import require_module

from rag.errors import DimensionMismatchError, RagConfigurationError
from rag.stores.base import VectorRecord

require_module("pgserver")  # the all-tests extra; CI installs it
require_module("pgvector")

from pgvector_server import pgvector_server  # noqa: E402 (after the check that pgserver is there)

from rag.stores.pgvector import PgVectorStore  # noqa: E402 (imports pgvector)

_spec = importlib.util.spec_from_file_location(
    "rag_store_contract", Path(__file__).parents[2] / "unit" / "rag_stores" / "store_contract.py"
)
assert _spec and _spec.loader
contract = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(contract)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def admin_url() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


@pytest.fixture
def db_url(admin_url: str) -> Iterator[str]:
    name = "pgv_" + uuid.uuid4().hex[:10]
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin_url.rsplit("/", 1)[0] + "/" + name
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


class TestPgVectorStore(contract.StoreContract):  # type: ignore[name-defined,misc]
    @pytest.fixture
    def store(self, db_url: str) -> Iterator[PgVectorStore]:
        s = PgVectorStore(db_url)
        yield s
        s.engine.dispose()


def unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    m = rng.normal(size=(n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_schema_indexes_and_dimension_guard(db_url: str) -> None:
    store = PgVectorStore(db_url, dimensions=16)
    assert store.dimensions == 16
    with store.engine.connect() as conn:
        indexes = dict(conn.execute(sa.text(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'agent_rag_chunks'"
        )).all())
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes["agent_rag_chunks_embedding_idx"]
    assert "USING gin (metadata jsonb_path_ops)" in indexes["agent_rag_chunks_metadata_idx"]
    with pytest.raises(DimensionMismatchError, match="16-dimension"):
        store.upsert([VectorRecord("x", [1.0] * 8, "t")])
    with pytest.raises(DimensionMismatchError):
        store.query([1.0] * 8, top_k=1)
    again = PgVectorStore(db_url)  # a second process finds the table and its width
    assert again.dimensions == 16
    store.engine.dispose()
    again.engine.dispose()
    assert PgVectorStore.create_statements(16)[0] == "CREATE EXTENSION IF NOT EXISTS vector"


def test_create_false_needs_the_migration(db_url: str) -> None:
    store = PgVectorStore(db_url, create=False)
    assert store.query([1.0, 0.0], top_k=3) == []
    with pytest.raises(RagConfigurationError, match="create_statements"):
        store.upsert([VectorRecord("x", [1.0, 0.0], "t")])
    with store.engine.begin() as conn:
        for statement in PgVectorStore.create_statements(2):
            conn.execute(sa.text(statement))
    store.upsert([VectorRecord("x", [1.0, 0.0], "t")])
    assert [h.id for h in store.query([1.0, 0.1], top_k=3)] == ["x"]
    store.engine.dispose()


def test_hnsw_answers_a_large_namespace_and_a_small_one_falls_back_to_exact(db_url: str) -> None:
    rng = np.random.default_rng(7)
    dim, big, small = 32, 3000, 12
    store = PgVectorStore(db_url)
    vectors = unit(rng, big, dim)
    store.upsert([VectorRecord(f"b{i}", vectors[i].tolist(), f"b{i}", {"org": "big"})
                  for i in range(big)], namespace="big")
    tiny = unit(rng, small, dim)
    store.upsert([VectorRecord(f"s{i}", tiny[i].tolist(), f"s{i}", {"org": "small"})
                  for i in range(small)], namespace="small")
    with store.engine.begin() as conn:
        conn.execute(sa.text("ANALYZE agent_rag_chunks"))
        plan = "\n".join(r[0] for r in conn.execute(
            sa.text("EXPLAIN SELECT id FROM agent_rag_chunks WHERE namespace = 'big' "
                    "ORDER BY embedding <=> CAST(:q AS vector) LIMIT 10"), {"q": str(vectors[0].tolist())}
        ))
    assert "agent_rag_chunks_embedding_idx" in plan  # the big namespace is served by the HNSW index

    queries = unit(rng, 20, dim)
    recall = []
    for q in queries:
        exact = {f"b{i}" for i in np.argsort(-(vectors @ q))[:10]}
        got = {h.id for h in store.query(q.tolist(), top_k=10, namespace="big")}
        recall.append(len(got & exact) / 10)
    assert float(np.mean(recall)) >= 0.9

    # The small namespace is a sliver of the table: the index walk finds few of its rows, and the
    # exact fallback returns all of them, best first, never a row of another namespace.
    q = tiny[3]
    hits = store.query(q.tolist(), top_k=small + 5, namespace="small")
    assert [h.id for h in hits] == [f"s{i}" for i in np.argsort(-(tiny @ q))]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    filtered = store.query(q.tolist(), top_k=5, namespace="big", filter={"org": "small"})
    assert filtered == []
    store.engine.dispose()


def test_refuses_other_databases() -> None:
    with pytest.raises(RagConfigurationError, match="PostgreSQL"):
        PgVectorStore("sqlite://")


def test_lexical_leg_ranks_like_every_store_and_names_fail_closed(db_url: str, tmp_path: Path) -> None:
    from rag.errors import ReservedNamespaceError, TopKTooLargeError
    from rag.stores.sql import SqlVectorStore

    texts = {
        "bread#0": "knead the dough and let the bread rise overnight",
        "bread#1": "a sourdough starter makes the loaf rise slowly",
        "cake#0": "whisk eggs and sugar for a light sponge cake",
        "tax#0": "file the tax return before the deadline",
    }
    records = [VectorRecord(k, [float(i + 1), 1.0, 0.5], t, {"doc": k.split("#")[0]})
               for i, (k, t) in enumerate(texts.items())]
    pg = PgVectorStore(db_url)
    reference = SqlVectorStore(f"sqlite:///{tmp_path}/ref.db")
    for store in (pg, reference):
        store.upsert(records, namespace="kitchen")
    for query in ("why does my bread rise", "sponge cake eggs", "deadline"):
        got = pg.lexical_query(query, top_k=3, namespace="kitchen")
        want = reference.lexical_query(query, top_k=3, namespace="kitchen")
        assert [(h.id, round(h.score, 9)) for h in got] == [(h.id, round(h.score, 9)) for h in want]
    assert pg.lexical_query("bread", top_k=3, namespace="kitchen", filter={"doc": "cake"}) == []
    pg.delete_by_ids(["bread#0"], namespace="kitchen")
    assert "bread#0" not in {h.id for h in pg.lexical_query("bread rise", top_k=5, namespace="kitchen")}
    with pytest.raises(ReservedNamespaceError):
        pg.upsert(records, namespace="__default__")
    with pytest.raises(ReservedNamespaceError):
        pg.query([1.0, 1.0, 0.5], top_k=1, namespace="__default__")
    with pytest.raises(TopKTooLargeError):
        pg.query([1.0, 1.0, 0.5], top_k=2**40, namespace="kitchen")
    pg.engine.dispose()
    reference.engine.dispose()
