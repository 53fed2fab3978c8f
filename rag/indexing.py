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
from typing import TYPE_CHECKING, Any

from lunora_jobs.errors import MetadataTooLargeError
from rag.lexical.base import LexicalRecord
from rag.stores.base import VectorRecord

if TYPE_CHECKING:
    from rag.define import Rag

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


def _previous_count(rag: Rag, source_id: str, namespace: str | None) -> tuple[int, str | None]:
    head = rag.store.get_by_ids([chunk_id(source_id, 0)], namespace=namespace)
    if not head:
        return 0, None
    meta = head[0].metadata
    return int(meta.get(COUNT_KEY, 1)), meta.get(HASH_KEY)


def index_document(
    rag: Rag,
    source_id: str,
    text: str,
    *,
    metadata: Mapping[str, Any] | None,
    namespace: str | None,
    reindex: bool,
    importance: float | None,
) -> IndexResult:
    """Index (or re-index) one source; see ``Rag.index``."""
    digest = content_hash(text, metadata, importance)
    old_count, old_hash = _previous_count(rag, source_id, namespace)
    if old_hash == digest and not reindex:
        return IndexResult(source_id, old_count, unchanged=True)
    texts = rag.config.chunk(text)
    vectors = rag.embedding.embed_document(texts)
    records = []
    for n, (chunk_text, vector) in enumerate(zip(texts, vectors, strict=True)):
        meta: dict[str, Any] = {**(metadata or {}), SOURCE_KEY: source_id, CHUNK_KEY: n}
        if importance is not None:
            meta[IMPORTANCE_KEY] = importance
        if n == 0:
            meta.update({HASH_KEY: digest, COUNT_KEY: len(texts)})
            if rag.config.embedding_model_version:
                meta[VERSION_KEY] = rag.config.embedding_model_version
        _check_metadata_size(rag, chunk_id(source_id, n), chunk_text, meta)
        records.append(VectorRecord(chunk_id(source_id, n), vector, chunk_text, meta))
    stale = [chunk_id(source_id, n) for n in range(len(texts), old_count)]
    if not records and old_count == 0:
        stale = [chunk_id(source_id, 0)]  # an emptied document may have left a lexical #0 behind
    if rag.lexical is not None and records:
        rag.lexical.upsert(
            [LexicalRecord(r.id, r.text, dict(r.metadata)) for r in records], namespace=namespace
        )
    if len(records) > 1:
        rag.store.upsert(records[1:], namespace=namespace)
    if stale:
        rag.store.delete_by_ids(stale, namespace=namespace)
        if rag.lexical is not None:
            rag.lexical.delete_by_ids(stale, namespace=namespace)
    if records:
        rag.store.upsert(records[:1], namespace=namespace)  # the commit marker, last
    return IndexResult(source_id, len(records), unchanged=False, deleted=max(0, old_count - len(records)))


def remove_document(rag: Rag, source_id: str, *, namespace: str | None) -> int:
    """Delete every chunk of ``source_id``; returns how many the index held."""
    count, _ = _previous_count(rag, source_id, namespace)
    ids = [chunk_id(source_id, n) for n in range(max(count, 1))]
    rag.store.delete_by_ids(ids, namespace=namespace)
    if rag.lexical is not None:
        rag.lexical.delete_by_ids(ids, namespace=namespace)
    return count


def _check_metadata_size(rag: Rag, record_id: str, text: str, metadata: Mapping[str, Any]) -> None:
    limit = rag.store.capabilities.max_metadata_bytes
    if limit is None:
        return
    size = len(json.dumps({"text": text, **metadata}, default=str).encode("utf-8"))
    if size > limit:
        raise MetadataTooLargeError(
            f"chunk {record_id} needs {size} bytes of metadata (text included) but the store allows {limit}; "
            "use a smaller chunk size or attach less metadata"
        )
