"""One semantic-memory search: the source asked under the run's identity, the answer normalized.

Whatever the source (a ``rag`` index, a callable, a registered function), a search ends as one
``SearchResult``: ranked hits, the prompt-ready context (the rag's own, else the hits joined) and
the deduplicated source ids. A rag is bound per search with ``identity.auth()``, so its
``rls_filter`` applies to every read and an anonymous run is refused by an index that has one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lunora_jobs.memory.identity import MemoryIdentity
from lunora_jobs.memory.options import SemanticMemory

FunctionRunner = Callable[[str, dict[str, Any]], Any]
"""``runner(path, args)``: how a registered function is called (the engine's, or a tool's ctx.run)."""


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """What a callable source is asked: the query, how many hits, and for whom."""

    query: str
    top_k: int
    identity: MemoryIdentity


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One ranked passage."""

    id: str
    source_id: str
    score: float
    text: str


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A normalized search answer."""

    hits: list[MemoryHit] = field(default_factory=list)
    context: str = ""
    sources: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The memo form (a ``memory:retrieve`` step's result)."""
        return {
            "context": self.context, "sources": list(self.sources),
            "hits": [{"id": h.id, "source_id": h.source_id, "score": h.score} for h in self.hits],
        }


def search(
    memory: SemanticMemory, query: str, identity: MemoryIdentity, runner: FunctionRunner,
    *, top_k: int | None = None,
) -> SearchResult:
    """Search ``memory.source`` for ``query`` as ``identity`` (at most ``top_k`` hits)."""
    k = memory.top_k if top_k is None else top_k
    source = memory.source
    if callable(getattr(source, "bind", None)) and callable(getattr(source, "retrieve", None)):
        namespace = memory.namespace(identity) if callable(memory.namespace) else memory.namespace
        bound = source.bind(auth=identity.auth(), conversation_id=identity.thread_key)
        raw = bound.retrieve(query, top_k=k, namespace=namespace, filter=memory.filter)
    elif isinstance(source, str):
        raw = runner(source, {"query": query, "top_k": k, "owner": identity.owner})
    else:
        raw = source(MemoryQuery(query, k, identity))
    return normalize(raw, k)


def read_document(
    memory: SemanticMemory, doc_id: str, identity: MemoryIdentity, runner: FunctionRunner
) -> str:
    """The full text of one document through ``memory.read`` (agentic ``read_memory``)."""
    if isinstance(memory.read, str):
        value = runner(memory.read, {"id": doc_id, "owner": identity.owner})
    else:
        value = memory.read(doc_id, identity)
    return value if isinstance(value, str) else str(value)


def normalize(raw: Any, top_k: int) -> SearchResult:
    """A source's answer as a ``SearchResult``: a rag ``RetrievalResult``, a mapping with ``hits``
    (or ``chunks``) and an optional ``context``, a list of hit mappings, or a bare context string."""
    if isinstance(raw, str):
        return SearchResult(context=raw)
    context: str | None = None
    items: Sequence[Any]
    if isinstance(raw, Mapping):
        items = raw.get("hits") or raw.get("chunks") or []
        context = raw.get("context")
    elif hasattr(raw, "chunks"):
        items, context = raw.chunks, getattr(raw, "context", None)
    elif isinstance(raw, Sequence):
        items = raw
    else:
        raise TypeError(
            f"a memory source returned {type(raw).__name__}; return a rag RetrievalResult, a list of "
            "{'id', 'text', 'score'} hits, {'hits': [...], 'context': str} or a context string"
        )
    hits = [_hit(item, rank) for rank, item in enumerate(items)][:top_k]
    sources = list(dict.fromkeys(h.source_id for h in hits))
    if context is None:
        context = "\n\n".join(f"[{h.source_id}] {h.text}" for h in hits)
    return SearchResult(hits, str(context), sources)


def _hit(item: Any, rank: int) -> MemoryHit:
    get: Callable[[str], Any] = item.get if isinstance(item, Mapping) else (lambda k: getattr(item, k, None))
    hit_id = str(get("id") if get("id") is not None else rank)
    source_id = get("source_id")
    text = get("text") if get("text") is not None else get("snippet")
    score = get("score")
    return MemoryHit(
        id=hit_id, source_id=str(source_id) if source_id is not None else hit_id.rsplit("#", 1)[0],
        score=float(score) if isinstance(score, int | float) else 0.0, text=str(text or ""),
    )
