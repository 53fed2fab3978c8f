"""``define_rag``: declare an index once (embedder, store, chunker, ranking); get a bound ``Rag``.

Example::

    from rag import define_rag, markdown_chunker, bm25_lexical_store, score_reranker

    docs = define_rag(
        embedding=MiniLMEmbedder(), index="docs", chunk=markdown_chunker(size=800, overlap=100),
        lexical_store=bm25_lexical_store(), rls_filter=lambda auth: {"org": auth["org"]},
        require_namespace=True, embedding_model_version="minilm-l6-v2",
    )
    docs.index("guide", text, metadata={"org": "acme", "title": "Guide"}, namespace="acme")
    rag = docs.bind(auth={"org": "acme"}, conversation_id="t1")     # per request: own cache + identity
    result = rag.retrieve("how do I reset my password?", top_k=5, namespace="acme")
    result.context, result.sources, result.chunks

``bind`` returns a ``Rag`` sharing the declaration but with its own identity (``auth`` for
``rls_filter``, ``conversation_id`` for ``transform_query``), tracer and query-embedding cache.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from lunora_jobs.errors import ConfigurationError, NamespaceRequiredError
from rag.chunkers import Chunker, fixed_chunker
from rag.config import VERSION_PATTERN, RagConfig, RetrieveOptions
from rag.defaults import default_embedder, default_vector_store
from rag.embedding import EmbeddingCalls
from rag.embeddings.base import Embedder
from rag.filters import merge_rls
from rag.fusion import DEFAULT_RRF_K
from rag.indexing import IndexResult, index_document, remove_document
from rag.rerank import Reranker
from rag.retrieval import RetrievalResult, retrieve
from rag.stores.base import VectorStore
from rag.transform import QueryTransform

__all__ = ["Rag", "RagConfig", "RetrieveOptions", "default_embedder", "default_vector_store", "define_rag"]

log = logging.getLogger(__name__)


def _pick(call: Any, declared: Any) -> Any:
    """Per-call override: ``False`` skips, ``None`` keeps the declaration, anything else replaces it."""
    if call is False:
        return None
    return declared if call is None else call


class Rag:
    """A bound rag: ``index``, ``remove``, ``retrieve``, ``as_tool``. Build it with ``define_rag``."""

    def __init__(
        self, config: RagConfig, *, auth: Any = None, conversation_id: str | None = None, tracer: Any = None
    ) -> None:
        self.config = config
        self.store = config.store
        self.lexical = config.lexical_store
        self.auth = auth
        self.conversation_id = conversation_id
        self._warned_shared = False  # the namespace-less warning is logged once per bound rag
        limit = config.max_embedding_dimensions
        max_dims = config.store.capabilities.max_dimensions if limit is None else (limit or None)
        self.embedding = EmbeddingCalls(
            config.embedding, max_dimensions=max_dims, cache_size=config.cache_embeddings, tracer=tracer
        )

    def bind(self, *, auth: Any = None, conversation_id: str | None = None, tracer: Any = None) -> Rag:
        """A rag for one request/identity: same declaration, its own cache and width check."""
        return Rag(self.config, auth=auth, conversation_id=conversation_id, tracer=tracer)

    def namespace(self, namespace: str | None) -> str | None:
        """The store namespace for a caller's namespace: ``embedding_model_version`` folded in."""
        if namespace is None and self.config.require_namespace:
            raise NamespaceRequiredError(
                f"rag {self.config.index!r} is multi-tenant (require_namespace=True): pass namespace=<tenant>"
            )
        if namespace is None and not self.config.allow_shared_namespace and not self._warned_shared:
            self._warned_shared = True
            log.warning(
                "rag %r called without a namespace: every caller shares the default namespace. Pass "
                "namespace=<tenant>, set require_namespace=True to make this an error (multi-tenant), "
                "or allow_shared_namespace=True to silence it (single-tenant).",
                self.config.index,
            )
        version = self.config.embedding_model_version
        return namespace if version is None else f"{namespace or ''}@{version}"

    def index(
        self,
        id: str,
        text: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        namespace: str | None = None,
        reindex: bool = False,
        importance: float | None = None,
    ) -> IndexResult:
        """Chunk, embed and upsert one source as ``<id>#0..n``; stale trailing chunks are deleted.

        Unchanged text (and metadata) short-circuits: no chunking, embedding or writes, ``unchanged=True``.
        ``reindex=True`` forces a full pass -- needed after attaching a lexical store or changing the
        chunker, which the content hash cannot see. ``importance`` (0..1) multiplies into this source's
        scores at retrieval. Metadata keys starting with ``_rag_`` are reserved.
        """
        if importance is not None and not 0.0 <= importance <= 1.0:
            raise ConfigurationError(f"importance must be within 0..1, got {importance}")
        reserved = sorted(k for k in metadata or {} if str(k).startswith("_rag_"))
        if reserved:
            raise ConfigurationError(f"metadata keys starting with '_rag_' are reserved: {reserved}")
        return index_document(
            self,
            id,
            text,
            metadata=metadata,
            namespace=self.namespace(namespace),
            reindex=reindex,
            importance=importance,
        )

    def remove(self, id: str, *, namespace: str | None = None) -> int:
        """Delete every chunk of source ``id`` (from the lexical store too); returns how many it had."""
        return remove_document(self, id, namespace=self.namespace(namespace))

    def retrieve(
        self,
        query: str,
        *,
        top_k: int | None = None,
        namespace: str | None = None,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
        rerank: Reranker | Literal[False] | None = None,
        transform_query: QueryTransform | Literal[False] | None = None,
        candidates: int | None = None,
    ) -> RetrievalResult:
        """Ranked chunks, a prompt-ready ``context`` and deduplicated ``sources`` for ``query``.

        ``filter`` is merged under ``rls_filter(auth)`` (RLS keys win). ``min_score`` thresholds the dense
        leg's cosine similarity (a store's native hybrid query returns fused ranks, so it does not apply
        there). ``rerank=False`` / ``transform_query=False`` skip those for this call.
        """
        if (top_k is not None and top_k < 1) or (candidates is not None and candidates < 1):
            raise ConfigurationError(
                f"top_k and candidates must be >= 1, got top_k={top_k} candidates={candidates}"
            )
        rls = self.config.rls_filter(self.auth) if self.config.rls_filter is not None else None
        options = RetrieveOptions(
            top_k=top_k,
            namespace=self.namespace(namespace),
            filter=merge_rls(dict(filter or {}), dict(rls or {})),
            min_score=self.config.min_score if min_score is None else min_score,
            rerank=_pick(rerank, self.config.rerank),
            transform_query=_pick(transform_query, self.config.transform_query),
            candidates=candidates,
        )
        return retrieve(self, query, options)

    def as_tool(self, **kwargs: Any) -> Any:
        """This rag as an agent tool (see ``rag.tool.rag_tool`` for the options)."""
        from rag.tool import rag_tool

        return rag_tool(self, **kwargs)


def define_rag(
    *,
    embedding: Embedder | None = None,
    store: VectorStore | None = None,
    index: str = "default",
    chunk: Chunker | None = None,
    **options: Any,
) -> Rag:
    """Declare a rag and return it bound to no identity (call ``.bind(...)`` per request).

    ``embedding``: an ``Embedder`` (default: offline MiniLM if installed, else the hashing embedder).
    ``store``: a ``VectorStore`` (default: the embedded default store for ``index``). ``chunk``: a chunker
    (default ``fixed_chunker(1000, 200)``). Other options (see ``RagConfig``): ``top_k``, ``candidates``,
    ``lexical_store``, ``lexical_top_k``, ``hybrid`` (False: never use a store's native hybrid query),
    ``rrf_k``, ``rerank``, ``transform_query``, ``rls_filter``, ``require_namespace``,
    ``allow_shared_namespace`` (single-tenant: no warning for a namespace-less call),
    ``embedding_model_version``, ``cache_embeddings``, ``max_embedding_dimensions``, ``min_score``,
    ``chunk_context=(before, after)``.
    """
    unknown = set(options) - set(RagConfig.__dataclass_fields__)
    if unknown:
        raise ConfigurationError(f"define_rag got unknown option(s) {sorted(unknown)}; see RagConfig")
    version = options.get("embedding_model_version")
    if version is not None and not VERSION_PATTERN.match(version):
        raise ConfigurationError(
            "embedding_model_version must match ^[A-Za-z0-9._-]{1,40}$, got " + repr(version)
        )
    if options.get("require_namespace") and options.get("allow_shared_namespace"):
        raise ConfigurationError(
            "require_namespace=True and allow_shared_namespace=True contradict each other: pick one"
        )
    if options.get("top_k", 5) < 1 or options.get("rrf_k", DEFAULT_RRF_K) < 0:
        raise ConfigurationError("top_k must be >= 1 and rrf_k >= 0")
    config = RagConfig(
        embedding=embedding if embedding is not None else default_embedder(),
        store=store if store is not None else default_vector_store(index),
        index=index,
        chunk=chunk or fixed_chunker(),
        **options,
    )
    return Rag(replace(config))
