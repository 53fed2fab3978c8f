"""The write side of a rag: chunk -> embed -> upsert, with deterministic ids and a content hash.

Chunk ids are ``<source_id>#<n>``. Chunk #0 carries the bookkeeping (content hash, chunk count, model
version) and is written *last*: it is the commit marker, so a crash mid-index leaves a hash mismatch and
the next sync redoes the document instead of trusting a half-written one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag.access import AccessPolicy
from rag.config import RagConfig
from rag.embedding import EmbeddingCalls
from rag.errors import MetadataTooLargeError
from rag.lexical.base import LexicalRecord
from rag.stores.base import VectorHit, VectorRecord, VectorStore

SOURCE_KEY = "_rag_source"
CHUNK_KEY = "_rag_chunk"
HASH_KEY = "_rag_hash"
COUNT_KEY = "_rag_chunks"
VERSION_KEY = "_rag_model_version"
IMPORTANCE_KEY = "_rag_importance"
BOOKKEEPING_PREFIX = "_rag_"


@dataclass(frozen=True, slots=True)
class IndexResult:
    """What ``index`` did: how many chunks the source has now, whether it was unchanged, how many stale
    trailing chunks were deleted."""

    id: str
    chunks: int
    unchanged: bool = False
    deleted: int = 0


def chunk_id(source_id: str, n: int) -> str:
    """The deterministic id of chunk ``n`` of ``source_id``."""
    return f"{source_id}#{n}"


def content_hash(text: str, metadata: Mapping[str, Any] | None, importance: float | None) -> str:
    """SHA-256 over the text and everything else that lands in the index (metadata, importance)."""
    payload = json.dumps([text, dict(metadata or {}), importance], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def with_header(title: str, chunk: str) -> str:
    """``chunk`` under its document's title (a contextual chunk header), unless it already opens with
    it (a Markdown H1 of the same name in the heading trail)."""
    first = chunk.split("\n", 1)[0]
    return chunk if title in first else f"{title}\n\n{chunk}"


def _previous_count(store: VectorStore, source_id: str, namespace: str | None) -> tuple[int, str | None]:
    head = store.get_by_ids([chunk_id(source_id, 0)], namespace=namespace)
    if not head:
        return 0, None
    meta = head[0].metadata
    return int(meta.get(COUNT_KEY, 1)), meta.get(HASH_KEY)


def _stored(config: RagConfig, ids: list[str], namespace: str | None) -> list[VectorHit]:
    """Rows already stored under ``ids``, in the vector store and in the lexical store (a crash between
    the two writes can leave one without the other)."""
    rows = config.store.get_by_ids(ids, namespace=namespace)
    lexical_get = getattr(config.lexical_store, "get_by_ids", None)
    if callable(lexical_get):
        rows = [*rows, *lexical_get(ids, namespace=namespace)]
    return rows


def index_document(
    config: RagConfig,
    embedding: EmbeddingCalls,
    source_id: str,
    text: str,
    *,
    metadata: Mapping[str, Any],
    namespace: str | None,
    reindex: bool,
    importance: float | None,
    access: AccessPolicy,
    scope: Mapping[str, Any] | None,
) -> IndexResult:
    """Index (or re-index) one source; see ``Rag.index``. ``scope``: the bound identity's RLS scope,
    which every row this call replaces or deletes must match (``None``: the system, unconfined)."""
    store, lexical = config.store, config.lexical_store
    digest = content_hash(text, metadata, importance)
    old_count, old_hash = _previous_count(store, source_id, namespace)
    texts = [] if old_hash == digest and not reindex else config.chunk(text)
    title = metadata.get("title")
    if config.chunk_headers and isinstance(title, str) and title.strip():
        texts = [with_header(title.strip(), t) for t in texts]
    if scope is not None:
        touched = [chunk_id(source_id, n) for n in range(max(old_count, len(texts), 1))]
        access.check_existing(_stored(config, touched, namespace), scope, "replace")
    if old_hash == digest and not reindex:
        return IndexResult(source_id, old_count, unchanged=True)
    vectors = embedding.embed_document(texts)
    records = []
    for n, (chunk_text, vector) in enumerate(zip(texts, vectors, strict=True)):
        meta: dict[str, Any] = {**metadata, SOURCE_KEY: source_id, CHUNK_KEY: n}
        if importance is not None:
            meta[IMPORTANCE_KEY] = importance
        if n == 0:
            meta.update({HASH_KEY: digest, COUNT_KEY: len(texts)})
            if config.embedding_model_version:
                meta[VERSION_KEY] = config.embedding_model_version
        _check_metadata_size(store, chunk_id(source_id, n), chunk_text, meta)
        records.append(VectorRecord(chunk_id(source_id, n), vector, chunk_text, meta))
    stale = [chunk_id(source_id, n) for n in range(len(texts), old_count)]
    if not records and old_count == 0:
        stale = [chunk_id(source_id, 0)]  # an emptied document may have left a lexical #0 behind
    if lexical is not None and records:
        lexical.upsert([LexicalRecord(r.id, r.text, dict(r.metadata)) for r in records], namespace=namespace)
    if len(records) > 1:
        store.upsert(records[1:], namespace=namespace)
    if stale:
        store.delete_by_ids(stale, namespace=namespace)
        if lexical is not None:
            lexical.delete_by_ids(stale, namespace=namespace)
    if records:
        store.upsert(records[:1], namespace=namespace)  # the commit marker, last
    return IndexResult(source_id, len(records), unchanged=False, deleted=max(0, old_count - len(records)))


def remove_document(
    config: RagConfig,
    source_id: str,
    *,
    namespace: str | None,
    access: AccessPolicy,
    scope: Mapping[str, Any] | None,
) -> int:
    """Delete every chunk of ``source_id``; returns how many the index held. Under a ``scope``, a source
    with any row outside it is refused, not deleted."""
    count, _ = _previous_count(config.store, source_id, namespace)
    ids = [chunk_id(source_id, n) for n in range(max(count, 1))]
    if scope is not None:
        access.check_existing(_stored(config, ids, namespace), scope, "delete")
    config.store.delete_by_ids(ids, namespace=namespace)
    if config.lexical_store is not None:
        config.lexical_store.delete_by_ids(ids, namespace=namespace)
    return count


def _check_metadata_size(store: VectorStore, record_id: str, text: str, metadata: Mapping[str, Any]) -> None:
    limit = store.capabilities.max_metadata_bytes
    if limit is None:
        return
    size = len(json.dumps({"text": text, **metadata}, default=str).encode("utf-8"))
    if size > limit:
        raise MetadataTooLargeError(
            f"chunk {record_id} needs {size} bytes of metadata (text included) but the store allows {limit}; "
            "use a smaller chunk size or attach less metadata"
        )
