"""``default_store``: the vector store a fresh machine gets, and the server one when configured.

* ``LUNORA_QDRANT_URL`` set -> ``QdrantStore`` on that server (production).
* otherwise -> ``EdgeStore`` under ``<LUNORA_DATA_DIR>/vectors``: Qdrant's own Rust engine
  in-process (HNSW, payload indexes, sparse BM25 + RRF fusion in the engine), persisted on disk.

Why not qdrant-client's local mode as the embedded default: it is a pure-Python brute-force
re-implementation -- every query scans every point and payload filters are evaluated per point in
Python, so latency grows linearly (see ``bench/rag.py``: tens of ms dense and hundreds of ms
filtered at 10k, seconds filtered at 100k), while the edge shard answers in about a millisecond
from an HNSW graph with a payload index. Local mode stays available as ``QdrantStore(path=...)``.

Example::

    from rag.stores.default import default_store
    store = default_store()          # EdgeStore(.lunora/vectors) or QdrantStore(url=...)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag.settings import RagSettings
from rag.stores.base import VectorStore


def default_store(
    settings: RagSettings | None = None,
    *,
    collection: str = "lunora_rag",
    indexed_fields: Mapping[str, str] | Sequence[str] | None = None,
) -> VectorStore:
    """The server ``QdrantStore`` when ``LUNORA_QDRANT_URL`` is set, else the embedded ``EdgeStore``.

    ``collection`` names the server collection, or the sub-directory of the embedded shard.
    """
    settings = settings or RagSettings()
    if settings.qdrant_url:
        from rag.stores.qdrant import QdrantStore

        return QdrantStore(url=settings.qdrant_url, collection=collection, indexed_fields=indexed_fields)
    from rag.stores.qdrant_edge import EdgeStore

    return EdgeStore(settings.data_dir / "vectors" / collection, indexed_fields=indexed_fields)
