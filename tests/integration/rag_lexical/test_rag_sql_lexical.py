"""sql_lexical_store on PostgreSQL, SQLite and MariaDB ranks exactly like bm25_lexical_store."""

from __future__ import annotations

import random
import threading

import pytest
import sqlalchemy as sa

from rag import define_rag, sql_lexical_store
from rag.embeddings.hashing import HashingEmbedder
from rag.lexical import LexicalRecord, bm25_lexical_store
from rag.stores.memory import MemoryStore

pytestmark = pytest.mark.integration

WORDS = (  # noqa: SIM905
    "password reset account key rotate console invoice billing monthly upload limit error token expire "
    "oauth saml identity provider timezone utc browser webhook retry queue worker deploy rollback cache "
    "redis postgres index shard replica backup restore audit log metric alert latency throughput"
).split()


def corpus(seed: int = 11, n: int = 240) -> list[tuple[str, LexicalRecord]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        # Zipf-ish word choice so document frequencies vary a lot
        text = " ".join(
            WORDS[min(int(rng.paretovariate(1.1)) - 1, len(WORDS) - 1)]
            if rng.random() < 0.5
            else rng.choice(WORDS)
            for _ in range(rng.randint(3, 40))
        )
        meta = {"org": rng.choice(["acme", "globex"]), "n": i % 7}
        out.append((rng.choice(["t1", "t2"]), LexicalRecord(f"doc{i}#0", text, meta)))
    return out


QUERIES = [
    "password reset",
    "rotate key console",
    "invoice billing monthly error",
    "redis postgres index",
    "latency",
    "utc timezone browser",
    "nothing-matches-this",
    "retry retry queue worker",
]


def load(store, records) -> None:
    for ns in ("t1", "t2"):
        batch = [r for n, r in records if n == ns]
        for start in range(0, len(batch), 50):
            store.upsert(batch[start : start + 50], namespace=ns)


def assert_same_rankings(sql_store, memory_store) -> None:
    for ns in ("t1", "t2", None):
        for query in QUERIES:
            for flt in (
                None,
                {"org": "acme"},
                {"n": {"$gte": 3}, "org": {"$in": ["globex"]}},
                {"org": {"$x": 1}},
            ):
                expected = memory_store.search(query, top_k=12, namespace=ns, filter=flt)
                got = sql_store.search(query, top_k=12, namespace=ns, filter=flt)
                assert [(h.id, h.score, h.text, h.metadata) for h in got] == [
                    (h.id, h.score, h.text, h.metadata) for h in expected
                ], (ns, query, flt)


def run_contract(url: str) -> None:
    records = corpus()
    sql_store, memory_store = sql_lexical_store(url), bm25_lexical_store()
    load(sql_store, records)
    load(memory_store, records)
    assert any(sql_store.search(q, top_k=5, namespace="t1") for q in QUERIES)
    assert_same_rankings(sql_store, memory_store)
    # updates and deletes keep them in lockstep (document frequencies and lengths change)
    rng = random.Random(5)
    changed = [
        (ns, LexicalRecord(r.id, " ".join(rng.sample(WORDS, 6)), r.metadata)) for ns, r in records[:60]
    ]
    gone = {ns: [r.id for n2, r in records[60:90] if n2 == ns] for ns in ("t1", "t2")}
    for store in (sql_store, memory_store):
        load(store, changed)
        for ns, ids in gone.items():
            store.delete_by_ids([*ids, "never-existed"], namespace=ns)
    assert_same_rankings(sql_store, memory_store)
    # a second instance on the same database re-uses the tables (idempotent creation) and sees the data
    again = sql_lexical_store(url)
    assert again.search("password", top_k=3, namespace="t1") == sql_store.search(
        "password", top_k=3, namespace="t1"
    )
    sql_store.engine.dispose()
    again.engine.dispose()


def test_postgres_matches_memory(pg_url: str) -> None:
    run_contract(pg_url)


def test_sqlite_matches_memory(sqlite_url: str) -> None:
    run_contract(sqlite_url)


def test_mariadb_matches_memory(mysql_url: str) -> None:
    run_contract(mysql_url)


def test_hybrid_rag_over_postgres_lexical_store(pg_url: str) -> None:
    lexical = sql_lexical_store(pg_url, table_prefix="kb")
    rag = define_rag(
        embedding=HashingEmbedder(64),
        store=MemoryStore(),
        lexical_store=lexical,
        rls_filter=lambda auth: {"org": auth},
    )
    rag.index("a", "Error ZX9000 means the upload exceeded the size limit.", metadata={"org": "acme"})
    rag.index("b", "Error ZX9000 for globex customers.", metadata={"org": "globex"})
    rag.index("c", "Unrelated text about invoices.", metadata={"org": "acme"})
    hits = rag.bind(auth="acme").retrieve("ZX9000", top_k=2).chunks
    assert hits[0].source_id == "a" and "b" not in {h.source_id for h in hits}
    rag.remove("a")
    with lexical.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM kb_postings WHERE doc_id = 'a#0'")).scalar() == 0
    lexical.engine.dispose()


@pytest.mark.parametrize("server", ["pg_url", "mysql_url"])
def test_concurrent_table_creation_is_safe(server: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(server)
    barrier = threading.Barrier(4, timeout=30)
    errors: list[BaseException] = []
    stores = []

    def start() -> None:
        try:
            barrier.wait()
            stores.append(sql_lexical_store(url, table_prefix="race"))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == [] and len(stores) == 4
    stores[0].upsert([LexicalRecord("a#0", "concurrent start")])
    assert [h.id for h in stores[3].search("concurrent", top_k=1)] == ["a#0"]
    for store in stores:
        store.engine.dispose()
