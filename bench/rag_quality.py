"""Retrieval quality on real documents: nDCG@10, MRR@10, recall@10 for dense, lexical and hybrid.

The corpus is built by ``bench/rag_corpus.py`` from the docstrings of the installed Python packages
(a few thousand documents; each query is a docstring's summary line, the document is the rest). Each
configuration indexes the whole corpus with the offline MiniLM embedder into a ``MemoryStore`` (whose
BM25 leg is the kernel every store shares) and ranks *documents* (``group_by="source"``):

- ``before``: the previous default, ``fixed_chunker(1000, 200)``, chunks without headers;
- ``structured``: ``markdown_chunker(1000, 0)`` (headings incl. Setext/reST underlines, blocks,
  sentences, word-safe), no headers;
- ``fixed+headers``: the old chunker with the document title on every chunk;
- ``after``: the new default: structured chunks with the title + heading trail on every chunk.

and, for hybrid, two document-level aggregations: ``max`` (a document ranks by its best fused chunk:
what ``group_by="source"`` does) and ``doc-rrf`` (each leg collapsed to documents first, then fused).

Embeddings are cached on disk by text hash (``--cache``, outside the repository), so a rerun costs only
what changed. Run (one command; builds the corpus on first use)::

    python bench/rag_quality.py
    python bench/rag_quality.py --configs before,after --docs 1000     # quicker
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_corpus import build

from rag import define_rag, fixed_chunker, markdown_chunker
from rag.define import Rag
from rag.embeddings.minilm import MiniLMEmbedder
from rag.fusion import reciprocal_rank_fusion
from rag.indexing import with_header
from rag.stores.memory import MemoryStore

K = 10
CONFIGS: dict[str, tuple[Callable[[], Any], bool]] = {
    "before": (lambda: fixed_chunker(1000, 200), False),
    "structured": (lambda: markdown_chunker(1000, 0), False),
    "fixed+headers": (lambda: fixed_chunker(1000, 200), True),
    "after": (lambda: markdown_chunker(1000, 0), True),
}


class CachedEmbedder:
    """MiniLM with a disk cache keyed by SHA-256 of the text (float32 blobs in SQLite)."""

    def __init__(self, path: Path) -> None:
        self.inner = MiniLMEmbedder(threads=2)
        self.model = self.inner.model
        self.dimensions = self.inner.dimensions
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path))
        self.db.execute("CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, vec BLOB)")
        self.embedded = 0
        self.seconds = 0.0

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [hashlib.sha256(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        found: dict[str, list[float]] = {}
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            marks = ",".join("?" * len(batch))
            for key, blob in self.db.execute(f"SELECT key, vec FROM emb WHERE key IN ({marks})", batch):
                found[key] = np.frombuffer(blob, dtype=np.float32).tolist()
        missing = [(k, t) for k, t in dict(zip(keys, texts, strict=True)).items() if k not in found]
        if missing:
            started = time.perf_counter()
            vectors = self.inner.embed_array([t for _, t in missing])
            self.seconds += time.perf_counter() - started
            self.embedded += len(missing)
            self.db.executemany(
                "INSERT OR REPLACE INTO emb VALUES (?, ?)",
                [(k, v.astype(np.float32).tobytes()) for (k, _), v in zip(missing, vectors, strict=True)],
            )
            self.db.commit()
            found.update({k: v.tolist() for (k, _), v in zip(missing, vectors, strict=True)})
        return [found[k] for k in keys]


def metrics(ranked: Sequence[str], relevant: str) -> tuple[float, float, float]:
    """(nDCG@10, reciprocal rank@10, recall@10) of one known-item query."""
    top = list(ranked[:K])
    if relevant not in top:
        return 0.0, 0.0, 0.0
    rank = top.index(relevant) + 1
    return 1.0 / math.log2(rank + 1), 1.0 / rank, 1.0


def doc_ranking(chunks: Sequence[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for c in chunks:
        seen.setdefault(c.source_id, None)
    return list(seen)


def systems(rag: Rag) -> dict[str, Callable[[str], list[str]]]:
    def run(mode: str) -> Callable[[str], list[str]]:
        return lambda q: [s.id for s in rag.retrieve(q, top_k=K, mode=mode, group_by="source").sources]  # type: ignore[arg-type]

    def doc_rrf(q: str) -> list[str]:
        legs = [doc_ranking(rag.retrieve(q, top_k=K * 8, mode=m).chunks) for m in ("dense", "lexical")]  # type: ignore[arg-type]
        return [d for d, _ in reciprocal_rank_fusion(legs)][:K]

    return {
        "dense": run("dense"),
        "lexical": run("lexical"),
        "hybrid": run("hybrid"),
        "hybrid doc-rrf": doc_rrf,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/cache/rag/corpus.json"))
    parser.add_argument("--cache", type=Path, default=Path("/work/cache/rag/minilm-embeddings.sqlite"))
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    args = parser.parse_args()
    if not args.corpus.exists():
        args.corpus.parent.mkdir(parents=True, exist_ok=True)
        args.corpus.write_text(json.dumps(build(3000), ensure_ascii=False))
    corpus = json.loads(args.corpus.read_text())
    docs = corpus["docs"][: args.docs]
    keep = {d["id"] for d in docs}
    queries = [q for q in corpus["queries"] if q["relevant"] in keep]
    embedder = CachedEmbedder(args.cache)
    print(f"{len(docs)} documents, {len(queries)} queries; sources {corpus['sources']}")
    rows: list[tuple[str, str, float, float, float]] = []
    for name in args.configs.split(","):
        make_chunker, headers = CONFIGS[name]
        rag = define_rag(
            embedding=embedder,
            store=MemoryStore(),
            chunk=make_chunker(),
            chunk_headers=headers,
            allow_shared_namespace=True,
        )
        # Embed every new chunk text (and the queries) in a few big batches first: same vectors, and
        # the cache then serves the per-document index calls.
        chunker = make_chunker()
        texts = [
            with_header(d["title"], c) if headers else c for d in docs for c in chunker(d["text"])
        ]
        for start in range(0, len(texts), 1024):
            embedder.embed_many(texts[start : start + 1024])
        embedder.embed_many([q["query"] for q in queries])
        chunks = sum(rag.index(d["id"], d["text"], metadata={"title": d["title"]}).chunks for d in docs)
        for system, search in systems(rag).items():
            scores = np.array([metrics(search(q["query"]), q["relevant"]) for q in queries])
            ndcg, mrr, recall = scores.mean(axis=0)
            rows.append((name, system, ndcg, mrr, recall))
            print(
                f"  {name:<14} {system:<15} nDCG@10 {ndcg:.3f}  MRR@10 {mrr:.3f}  "
                f"recall@10 {recall:.3f}  ({chunks} chunks)"
            )
    print(
        f"\nembedded {embedder.embedded} new texts in {embedder.seconds:.0f} s (the rest came from the cache)"
    )
    print("\n| configuration | system | nDCG@10 | MRR@10 | recall@10 |\n| --- | --- | --- | --- | --- |")
    for name, system, ndcg, mrr, recall in rows:
        print(f"| {name} | {system} | {ndcg:.3f} | {mrr:.3f} | {recall:.3f} |")


if __name__ == "__main__":
    main()
