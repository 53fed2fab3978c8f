"""Bulk ingestion: ``define_rag_source(rag, namespace=).sync(source, known_keys=)``.

The object source is injected -- anything with ``list()`` (an iterable or generator of
``SourceObject``/dicts) and ``get(obj)`` (the body as ``str``/``bytes``, or ``None`` if gone) -- so this
runs over a folder, an S3-like bucket or a table without depending on any of them. One pass keeps the
set of keys it saw (it needs it to prune) but never more than one body at a time.

Extractors are keyed by content type with ``"*"`` as the fallback. Plain-text types need none; any
other type without an extractor is *skipped*, never indexed as raw bytes. Pruning is explicit: only
keys in ``known_keys`` that this pass did not list are removed, and only after the listing completed
(a listing that fails part-way raises before anything is pruned). Example::

    ingest = define_rag_source(docs, namespace="acme", extractors={"application/pdf": pdf_to_text})
    report = ingest.sync(DirectorySource("./handbook"), known_keys=load_keys())
    save_keys(report.indexed + report.unchanged + report.skipped)
"""

from __future__ import annotations

import mimetypes
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rag.define import Rag

PLAIN_TEXT_TYPES = frozenset(
    {"text/plain", "text/markdown", "text/x-markdown", "text/csv", "application/json"}
)
Extractor = Callable[[bytes | str, "SourceObject"], "str | None"]


@dataclass(frozen=True, slots=True)
class SourceObject:
    """One listed object: its key (the index id), content type and metadata to attach."""

    key: str
    content_type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class ObjectSource(Protocol):
    """What ``sync`` reads: a listing and a way to fetch one body."""

    def list(self) -> Iterable[SourceObject | Mapping[str, Any]]:
        """Every current object (may be a generator that pages lazily)."""
        ...

    def get(self, obj: SourceObject) -> bytes | str | None:
        """The body of ``obj``, or ``None`` if it vanished since the listing."""
        ...


@dataclass(slots=True)
class SyncReport:
    """Keys by outcome of one ``sync`` pass."""

    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)

    @property
    def seen(self) -> list[str]:
        """Every key this pass listed (what to persist as the next ``known_keys``)."""
        return [*self.indexed, *self.unchanged, *self.skipped]


def _object(item: SourceObject | Mapping[str, Any]) -> SourceObject:
    if isinstance(item, SourceObject):
        return item
    return SourceObject(str(item["key"]), item.get("content_type"), dict(item.get("metadata") or {}))


class RagSource:
    """A rag plus a namespace and extractors; see ``define_rag_source``."""

    def __init__(self, rag: Rag, *, namespace: str | None, extractors: Mapping[str, Extractor]) -> None:
        self.rag = rag
        self.namespace = namespace
        self.extractors = dict(extractors)

    def sync(
        self,
        source: ObjectSource,
        *,
        known_keys: Iterable[str] | None = None,
        on_progress: Callable[[str, str], None] | None = None,
    ) -> SyncReport:
        """Index every listed object (unchanged ones cost one ``get`` and no embedding); prune the
        ``known_keys`` this pass did not list; then, if anything was written and the store has an
        ``optimize()``, call it once. ``on_progress(key, outcome)`` is called per object."""
        report = SyncReport()
        seen: set[str] = set()
        for item in source.list():
            obj = _object(item)
            if obj.key in seen:
                continue
            seen.add(obj.key)
            outcome = self._one(source, obj)
            getattr(report, outcome).append(obj.key)
            if on_progress is not None:
                on_progress(obj.key, outcome)
        for key in sorted(set(known_keys or ()) - seen):
            self.rag.remove(key, namespace=self.namespace)
            report.pruned.append(key)
            if on_progress is not None:
                on_progress(key, "pruned")
        optimize = getattr(self.rag.store, "optimize", None)
        if callable(optimize) and (report.indexed or report.pruned):
            # Build the ANN index once for the whole pass (EdgeStore: HNSW), so the first query
            # after a bulk load does not pay for it.
            optimize()
        return report

    def _one(self, source: ObjectSource, obj: SourceObject) -> str:
        content_type = (obj.content_type or "application/octet-stream").split(";", 1)[0].strip().lower()
        extractor = self.extractors.get(content_type)
        if extractor is None and content_type not in PLAIN_TEXT_TYPES:
            extractor = self.extractors.get("*")
            if extractor is None:
                return "skipped"  # unknown binary: embedding its bytes would match nothing
        body = source.get(obj)
        if body is None:
            return "skipped"
        if extractor is not None:
            text = extractor(body, obj)
        else:
            text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        del body  # one body at a time: do not hold it across the embedding call
        if text is None:
            return "skipped"
        result = self.rag.index(obj.key, text, metadata=obj.metadata, namespace=self.namespace)
        return "unchanged" if result.unchanged else "indexed"


def define_rag_source(
    rag: Rag, *, namespace: str | None = None, extractors: Mapping[str, Extractor] | None = None
) -> RagSource:
    """Bulk ingestion over an injected object source into ``rag`` (see the module docstring)."""
    return RagSource(rag, namespace=namespace, extractors=extractors or {})


_EXTRA_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".csv": "text/csv",
    ".json": "application/json",
}


class DirectorySource:
    """The files under a folder as an ``ObjectSource``: key = path relative to the folder (POSIX)."""

    def __init__(self, root: str | Path, *, pattern: str = "**/*") -> None:
        self.root = Path(root)
        self.pattern = pattern

    def list(self) -> Iterable[SourceObject]:
        """Files in sorted order (hidden files and folders skipped)."""
        for path in sorted(self.root.glob(self.pattern)):
            rel = path.relative_to(self.root)
            if not path.is_file() or any(part.startswith(".") for part in rel.parts):
                continue
            content_type = _EXTRA_TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0]
            yield SourceObject(rel.as_posix(), content_type, {"path": rel.as_posix()})

    def get(self, obj: SourceObject) -> bytes | None:
        """The file's bytes, or ``None`` if it was deleted since the listing."""
        try:
            return (self.root / obj.key).read_bytes()
        except FileNotFoundError:
            return None
