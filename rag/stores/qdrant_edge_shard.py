"""Opening and creating the embedded Qdrant shard behind ``EdgeStore``, and its filter builder.

A shard directory can be open in one process only (its WAL holds a file lock), so shards are
shared per process: every ``EdgeStore`` on the same path gets the same handle (reference counted),
and only another *process* gets ``VectorStoreLockedError``.

Example::

    shard = acquire_shard(Path(".lunora/vectors/docs"), {"tenant": "keyword"})   # None if empty
    shard = shard or acquire_shard(Path(".lunora/vectors/docs"), {}, dimensions=384)
    release_shard(Path(".lunora/vectors/docs"))
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from rag.errors import VectorStoreLockedError
from rag.stores.qdrant_payload import DENSE, HAS_META, NS_FIELD, SPARSE

_SCHEMAS: dict[str, Any] = {
    "keyword": lambda: qe.KeywordIndexParams(),
    "integer": lambda: qe.IntegerIndexParams(),
    "float": lambda: qe.FloatIndexParams(),
    "bool": lambda: qe.BoolIndexParams(),
}


class EdgeFilters:
    """``QdrantFilterBuilder`` over ``qdrant_edge``."""

    def match_value(self, key: str, value: str | int | bool) -> Any:
        """Keyword or integer equality; ``None`` (re-check in Python) for a bool."""
        if isinstance(value, bool):
            # qdrant-edge-py 0.9 turns a Python bool into an integer match, which never matches a
            # stored JSON boolean; leave it to the Python re-check instead of returning nothing.
            return None
        return qe.FieldCondition(key=key, match=qe.MatchValue(value))

    def value_range(self, key: str, bounds: dict[str, float]) -> Any:
        """Numeric range."""
        return qe.FieldCondition(key=key, range=qe.RangeFloat(**bounds))

    def filter(self, must: list[Any], should: list[Any], must_not: list[Any]) -> Any:
        """Nested boolean filter."""
        return qe.Filter(must=must or None, should=should or None, must_not=must_not or None)


_OPEN: dict[Path, list[Any]] = {}  # resolved path -> [shard, references]
_OPEN_LOCK = threading.Lock()


def acquire_shard(
    path: Path, indexed_fields: Mapping[str, str], *, dimensions: int | None = None, **hnsw: Any
) -> qe.EdgeShard | None:
    """This process's handle on the shard at ``path``: shared if open, else loaded, else created
    when ``dimensions`` is given (``hnsw``: ``m``, ``ef_construct``, ``tenant_graphs``); else None."""
    key = path.resolve()
    with _OPEN_LOCK:
        entry = _OPEN.get(key)
        if entry is not None:
            entry[1] += 1
            _index_fields(entry[0], indexed_fields, entry[0].info().payload_schema)
            return entry[0]  # type: ignore[no-any-return]
        if path.is_dir() and any(path.iterdir()):
            shard = load_shard(path, indexed_fields)
        elif dimensions is not None:
            shard = create_shard(path, dimensions, indexed_fields=indexed_fields, **hnsw)
        else:
            return None
        _OPEN[key] = [shard, 1]
        return shard


def release_shard(path: Path) -> None:
    """Drop one reference; the last one flushes and closes the shard."""
    key = path.resolve()
    with _OPEN_LOCK:
        entry = _OPEN.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _OPEN[key]
            entry[0].flush()
            entry[0].close()


def _index_fields(shard: qe.EdgeShard, indexed_fields: Mapping[str, str], known: Any = ()) -> None:
    for name, kind in indexed_fields.items():
        if f"metadata.{name}" not in known:
            shard.update(qe.UpdateOperation.create_field_index(f"metadata.{name}", _SCHEMAS[kind]()))


def create_shard(
    path: Path,
    dimensions: int,
    *,
    indexed_fields: Mapping[str, str],
    m: int = 16,
    ef_construct: int = 128,
    tenant_graphs: bool = False,
) -> qe.EdgeShard:
    """A new shard: dense cosine vectors, BM25 sparse vectors with IDF, namespace + field indexes."""
    config = qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=dimensions, distance=qe.Distance.Cosine)},
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        # payload_m adds per-value links for indexed payload keys, which keeps filtered HNSW
        # search connected (recall) when a filter selects a small slice of the shard.
        hnsw_config=qe.HnswIndexConfig(
            m=m, ef_construct=ef_construct, full_scan_threshold=10_000, payload_m=m
        ),
        # Payload read per hit (text, metadata) from RAM, not from a cold mmap page.
        payload_memory=qe.Memory.Cached,
    )
    path.mkdir(parents=True, exist_ok=True)
    shard = qe.EdgeShard.create(str(path), config)
    # Per-namespace graphs (payload_m) would cost a second full HNSW build for one namespace;
    # opt in with tenant_graphs=True when many mid-sized namespaces share the shard.
    tenant = qe.KeywordIndexParams(is_tenant=True, enable_hnsw=tenant_graphs)
    shard.update(qe.UpdateOperation.create_field_index(NS_FIELD, tenant))
    shard.update(qe.UpdateOperation.create_field_index(HAS_META, qe.IntegerIndexParams()))
    _index_fields(shard, indexed_fields)
    return shard


def load_shard(path: Path, indexed_fields: Mapping[str, str]) -> qe.EdgeShard:
    """Open an existing shard, indexing fields declared since it was created.

    Raises ``VectorStoreLockedError`` when another process holds it open.
    """
    try:
        shard = qe.EdgeShard.load(str(path))
    except Exception as exc:
        if "WouldBlock" in str(exc):  # the WAL's file lock: another process has the shard open
            raise VectorStoreLockedError(
                f"the embedded vector store at {path} is open in another process. Use one process "
                "per directory (e.g. a Celery worker with --pool=threads or --concurrency=1), give "
                "each process its own LUNORA_DATA_DIR, or run a Qdrant server and set "
                "LUNORA_QDRANT_URL."
            ) from exc
        raise
    _index_fields(shard, indexed_fields, shard.info().payload_schema)
    return shard
