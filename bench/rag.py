"""Vector-store benchmark: index throughput, retrieve latency and recall@10 for every rag store.

Data are clustered synthetic embeddings -- a Gaussian mixture (``--clusters`` centroids on the
unit sphere, each point = centroid + noise, normalized; same-cluster cosine ~0.8), never
isotropic random vectors, whose neighbourhoods are meaningless and flatter HNSW. Each point gets
a category (10% selectivity, the filter) and a synthetic text drawn from its cluster's vocabulary
(the lexical leg). Query embeddings are precomputed: latencies exclude embedding.

Measured per store and size: index chunks/s (upsert, plus optimize where the store needs one),
p50/p95 ms of ``dense``, ``filtered`` (category filter), ``hybrid`` and ``hybrid+filter`` (dense +
lexical legs of ``candidates`` = 40, RRF k=60, top 10; the Qdrant stores run both legs in Qdrant
on its sparse BM25 vectors via ``hybrid_query``, the others use ``bm25_lexical_store`` +
``rag.fusion``), and recall@10 of dense and filtered against exact search. Each measure runs up to
``--queries`` queries or ``--budget`` seconds (at least 5), so a
slow store is sampled, not skipped; a store that cannot serve a size is skipped with a note.

Run::

    python bench/rag.py --sizes 10000,100000 --stores memory,qdrant-local,edge,sql-sqlite
    python bench/rag.py --sizes 10000 --stores sql-postgres --pg-url postgresql+psycopg://postgres@127.0.0.1/x
    python bench/rag.py --sizes 10000 --stores sql-postgres,pgvector --pgserver

``pgvector`` (``PgVectorStore``: HNSW) needs a PostgreSQL with the extension: ``--pgserver`` starts a
private one from the ``pgserver`` wheel (PostgreSQL 16 + pgvector, the tests' server) and points both
PostgreSQL stores at it, so the two are measured on the same server in one run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag.fusion import fuse_hits
from rag.lexical.base import LexicalRecord
from rag.lexical.memory import bm25_lexical_store
from rag.stores.base import VectorHit, VectorRecord

DIM = 384
TOP_K = 10
CANDIDATES = 40
NS = "bench"
FILTER = {"category": "c3"}


class Corpus:
    """Clustered embeddings + categories + texts, and held-out queries from the same mixture."""

    def __init__(self, size: int, clusters: int, queries: int, seed: int = 7) -> None:
        rng = np.random.default_rng(seed)
        centroids = rng.normal(size=(clusters, DIM)).astype(np.float32)
        centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
        noise = 0.5 / np.sqrt(DIM)

        def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
            labels = rng.integers(0, clusters, n)
            v = centroids[labels] + rng.normal(scale=noise, size=(n, DIM)).astype(np.float32)
            return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32), labels

        self.vectors, labels = draw(size)
        self.queries, qlabels = draw(queries)
        vocab = [f"w{i:05d}" for i in range(20 * clusters)]
        topic = [vocab[c * 20 : (c + 1) * 20] for c in range(clusters)]
        pick = rng.integers(0, 20, size=(size, 12))
        common = rng.integers(0, len(vocab), size=(size, 4))
        self.texts = [
            " ".join([*(topic[labels[i]][j] for j in pick[i]), *(vocab[j] for j in common[i])])
            for i in range(size)
        ]
        self.query_texts = [" ".join(topic[c][j] for j in rng.integers(0, 20, 3)) for c in qlabels]
        self.categories = [f"c{i % 10}" for i in range(size)]
        self.ids = [f"doc{i}#0" for i in range(size)]

    def records(self, start: int, stop: int) -> list[VectorRecord]:
        return [
            VectorRecord(
                self.ids[i], self.vectors[i].tolist(), self.texts[i], {"category": self.categories[i]}
            )
            for i in range(start, stop)
        ]

    def exact(self, q: int, filtered: bool) -> set[str]:
        scores = self.vectors @ self.queries[q]
        if filtered:
            mask = np.fromiter((c == FILTER["category"] for c in self.categories), bool, len(self.categories))
            scores = np.where(mask, scores, -np.inf)
        return {self.ids[i] for i in np.argsort(-scores)[:TOP_K]}


def make_store(name: str, workdir: Path, args: argparse.Namespace) -> Any:
    if name == "memory":
        from rag.stores.memory import MemoryStore

        return MemoryStore()
    if name == "qdrant-local":
        from rag.stores.qdrant import QdrantStore

        # On disk, local mode pickles every point into SQLite (~100-400 points/s here); past
        # --local-disk-max it runs in memory so 100k loads in minutes. Query paths are the same.
        where = workdir / "qdrant" if args.size <= args.local_disk_max else ":memory:"
        return QdrantStore(path=where, collection="bench", indexed_fields={"category": "keyword"})
    if name == "edge":
        from rag.stores.qdrant_edge import EdgeStore

        return EdgeStore(workdir / "edge", indexed_fields={"category": "keyword"}, optimize_after=10**12)
    if name == "sql-sqlite":
        from rag.stores.sql import SqlVectorStore

        return SqlVectorStore(f"sqlite:///{workdir / 'vectors.db'}")
    if name == "sql-postgres":
        from rag.stores.sql import SqlVectorStore

        if not args.pg_url:
            raise SystemExit("sql-postgres needs --pg-url (an empty database you own)")
        return SqlVectorStore(args.pg_url, table=f"rag_bench_{int(time.time())}")
    if name == "pgvector":
        from rag.stores.pgvector import PgVectorStore

        if not args.pg_url:
            raise SystemExit("pgvector needs --pg-url (an empty database on a server with pgvector)")
        return PgVectorStore(args.pg_url, table=f"rag_bench_pgv_{int(time.time())}")
    raise SystemExit(f"unknown store {name!r}")


def timed(fn: Callable[[int], Any], n: int, budget: float) -> tuple[list[float], list[Any]]:
    """Latencies (ms) and results of ``fn(q)`` for up to ``n`` queries or ``budget`` seconds (>= 5)."""
    lat: list[float] = []
    out: list[Any] = []
    deadline = time.perf_counter() + budget
    for q in range(n):
        t0 = time.perf_counter()
        out.append(fn(q))
        lat.append((time.perf_counter() - t0) * 1000)
        if q >= 4 and time.perf_counter() > deadline:
            break
    return lat, out


def pct(lat: list[float], p: float) -> float:
    return float(np.percentile(lat, p)) if lat else float("nan")


def recall(corpus: Corpus, results: list[list[VectorHit]], filtered: bool) -> float:
    return statistics.mean(
        len({h.id for h in hits} & corpus.exact(q, filtered)) / TOP_K for q, hits in enumerate(results)
    )


def run_one(name: str, corpus: Corpus, lexical: Any, args: argparse.Namespace) -> dict[str, Any]:
    size = len(corpus.ids)
    workdir = Path(tempfile.mkdtemp(prefix=f"ragbench-{name}-"))
    row: dict[str, Any] = {"store": name, "size": size}
    try:
        store = make_store(name, workdir, args)
        t0 = time.perf_counter()
        for start in range(0, size, 1000):
            store.upsert(corpus.records(start, min(size, start + 1000)), namespace=NS)
        upsert_s = time.perf_counter() - t0
        optimize_s = 0.0
        if hasattr(store, "optimize"):
            t1 = time.perf_counter()
            store.optimize()
            optimize_s = time.perf_counter() - t1
        row.update(
            upsert_s=round(upsert_s, 2),
            optimize_s=round(optimize_s, 2),
            index_chunks_per_s=round(size / (upsert_s + optimize_s)),
        )
        q = corpus.queries
        native = hasattr(store, "hybrid_query")

        def dense(i: int, flt: dict[str, Any] | None = None) -> list[VectorHit]:
            hits: list[VectorHit] = store.query(q[i].tolist(), top_k=TOP_K, namespace=NS, filter=flt)
            return hits

        def hybrid(i: int, flt: dict[str, Any] | None = None) -> list[VectorHit]:
            if native:
                fused: list[VectorHit] = store.hybrid_query(
                    q[i].tolist(),
                    corpus.query_texts[i],
                    top_k=TOP_K,
                    candidates=CANDIDATES,
                    namespace=NS,
                    filter=flt,
                    rrf_k=60,
                )
                return fused
            legs = [
                store.query(q[i].tolist(), top_k=CANDIDATES, namespace=NS, filter=flt),
                lexical.search(corpus.query_texts[i], top_k=CANDIDATES, namespace=NS, filter=flt),
            ]
            return fuse_hits(legs, k=60)[:TOP_K]

        measures: dict[str, Callable[[int], list[VectorHit]]] = {
            "dense": dense,
            "filtered": lambda i: dense(i, FILTER),
            "hybrid": hybrid,
            "hybrid+filter": lambda i: hybrid(i, FILTER),
        }
        for label, fn in measures.items():
            fn(0)  # warm-up (lazy loads, caches)
            lat, res = timed(fn, args.queries, args.budget)
            row[f"{label}_p50_ms"] = round(pct(lat, 50), 2)
            row[f"{label}_p95_ms"] = round(pct(lat, 95), 2)
            row[f"{label}_n"] = len(lat)
            if label in ("dense", "filtered"):
                row[f"{label}_recall@10"] = round(recall(corpus, res, label == "filtered"), 4)
            if label == "filtered":
                assert all(h.metadata.get("category") == "c3" for hits in res for h in hits)
        if hasattr(store, "close"):
            store.close()
    except Exception as exc:  # report and go on: one store failing must not hide the others
        row["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return row


def skip_reason(name: str, size: int) -> str | None:
    if name.startswith("sql") and size > 50_000:
        return "over SqlVectorStore's default max_scan (50,000): it would refuse the namespace by design"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--stores", default="memory,qdrant-local,edge,sql-sqlite")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--budget", type=float, default=15.0, help="seconds per measure before sampling stops"
    )
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--pg-url", default=None)
    parser.add_argument(
        "--pgserver", action="store_true", help="run a private PostgreSQL + pgvector (pgserver)"
    )
    parser.add_argument(
        "--local-disk-max", type=int, default=20_000, help="qdrant-local on disk up to this size"
    )
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args()
    if args.pgserver:
        with _private_pgvector() as url:
            args.pg_url = url
            _run(args)
    else:
        _run(args)


@contextmanager
def _private_pgvector() -> Iterator[str]:
    tests = Path(__file__).resolve().parents[1] / "tests"
    sys.path[:0] = [str(tests), str(tests / "integration" / "rag_stores")]
    import sqlalchemy as sa
    from pgvector_server import pgvector_server

    with pgvector_server() as admin:
        engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text("CREATE DATABASE bench"))
        engine.dispose()
        yield admin.rsplit("/", 1)[0] + "/bench"


def _run(args: argparse.Namespace) -> None:
    rows: list[dict[str, Any]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        corpus = Corpus(size, args.clusters, args.queries)
        lexical = None
        for name in args.stores.split(","):
            reason = skip_reason(name, size)
            if reason:
                print(f"# skip {name} @ {size}: {reason}", flush=True)
                continue
            if lexical is None and name != "edge":
                t0 = time.perf_counter()
                lexical = bm25_lexical_store()
                for start in range(0, size, 1000):
                    lexical.upsert(
                        [
                            LexicalRecord(corpus.ids[i], corpus.texts[i], {"category": corpus.categories[i]})
                            for i in range(start, min(size, start + 1000))
                        ],
                        namespace=NS,
                    )
                print(
                    f"# bm25_lexical_store @ {size}: indexed in {time.perf_counter() - t0:.1f}s", flush=True
                )
            args.size = size
            if name == "qdrant-local" and size > args.local_disk_max:
                print(
                    f"# note: qdrant-local @ {size} runs in memory (on-disk ingestion is too slow)",
                    flush=True,
                )
            row = run_one(name, corpus, lexical, args)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    cols = [
        "store",
        "size",
        "index_chunks_per_s",
        "dense_p50_ms",
        "dense_p95_ms",
        "filtered_p50_ms",
        "filtered_p95_ms",
        "hybrid_p95_ms",
        "hybrid+filter_p50_ms",
        "hybrid+filter_p95_ms",
        "dense_recall@10",
        "filtered_recall@10",
    ]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for row in rows:
        print("| " + " | ".join(str(row.get(c, row.get("error", ""))) for c in cols) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
