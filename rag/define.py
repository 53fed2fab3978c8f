"""``define_rag``: declare an index once (embedder, store, chunker, ranking); get a bound ``Rag``.

Example::

    from rag import define_rag, MiniLMEmbedder

    docs = define_rag(
        embedding=MiniLMEmbedder(), index="docs",
        rls_filter=lambda auth: {"org": auth["org"]}, require_namespace=True,
    )
    docs.index("guide", text, metadata={"org": "acme", "title": "Guide"}, namespace="acme")
    rag = docs.bind(auth={"org": "acme"}, conversation_id="t1")     # per request: own cache + identity
    result = rag.retrieve("how do I reset my password?", top_k=5, namespace="acme")
    result.context, result.sources, result.chunks

``bind`` returns a ``Rag`` sharing the declaration but with its own identity (``auth`` for
``rls_filter``, ``conversation_id`` for ``transform_query``), tracer and query-embedding cache. The
unbound declaration is the application acting as the system: it may write anywhere, and it may
read only when the index has no ``rls_filter`` (see ``rag.access``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from rag.access import AccessPolicy
from rag.chunkers import Chunker, default_chunker
from rag.config import MODES, VERSION_PATTERN, GroupBy, Mode, RagConfig, RetrieveOptions
from rag.defaults import default_embedder, default_vector_store
from rag.embedding import EmbeddingCalls
from rag.embeddings.base import Embedder
from rag.errors import (
    HybridUnavailableError,
    NamespaceRequiredError,
    RagConfigurationError,
    RagInputError,
)
from rag.filters import merge_rls
from rag.fusion import DEFAULT_RRF_K
from rag.indexing import IndexResult, index_document, remove_document
from rag.inputs import check_count, check_mapping, check_query, check_source_id, check_text
from rag.namespaces import caller_namespace
from rag.rerank import Reranker
from rag.retrieval import RetrievalResult, has_lexical_leg, retrieve
from rag.stores.base import VectorStore
from rag.tool import RagTool, rag_tool
from rag.transform import QueryTransform

__all__ = ["Rag", "RagConfig", "RetrieveOptions", "default_embedder", "default_vector_store", "define_rag"]

log = logging.getLogger(__name__)
_FILTER_EXAMPLE = "{'org': 'acme'}"


def _pick(call: Any, declared: Any) -> Any:
    """Per-call override: ``False`` skips, ``None`` keeps the declaration, anything else replaces it."""
    if call is False:
        return None
    return declared if call is None else call


class Rag:
    """A bound rag: ``index``, ``remove``, ``retrieve``, ``as_tool``. Build it with ``define_rag``."""

    def __init__(
        self,
        config: RagConfig,
        *,
        auth: Any = None,
        conversation_id: str | None = None,
        tracer: Any = None,
        bound: bool = False,
    ) -> None:
        self.config = config
        self.store = config.store
        self.lexical = config.lexical_store
        self.auth = auth
        self.conversation_id = conversation_id
        self.access = AccessPolicy(config.rls_filter, auth, bound)
        self._warned_shared = False  # the namespace-less warning is logged once per bound rag
        limit = config.max_embedding_dimensions
        max_dims = config.store.capabilities.max_dimensions if limit is None else (limit or None)
        self.embedding = EmbeddingCalls(
            config.embedding, max_dimensions=max_dims, cache_size=config.cache_embeddings, tracer=tracer
        )

    def bind(self, *, auth: Any = None, conversation_id: str | None = None, tracer: Any = None) -> Rag:
        """A rag for one request/identity: same declaration, its own cache and width check.

        ``auth`` is the caller's *verified* identity; with an ``rls_filter``, a missing or empty one
        is refused at the first read or write (never treated as the system).
        """
        return Rag(self.config, auth=auth, conversation_id=conversation_id, tracer=tracer, bound=True)

    def namespace(self, namespace: str | None) -> str | None:
        """The store namespace for a caller's namespace: ``embedding_model_version`` folded in."""
        namespace = caller_namespace(namespace)
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
        scores at retrieval. Metadata keys starting with ``_rag_`` are reserved. Under a bound identity
        with an ``rls_filter``, the metadata must match the identity's scope and an id another identity
        owns is refused (``ForeignRowError``).
        """
        source_id = check_source_id(id)
        body = check_text(text)
        folded = self.namespace(namespace)
        meta = check_mapping(metadata, "metadata", "{'title': 'Guide'}") or {}
        number = isinstance(importance, int | float) and not isinstance(importance, bool)
        if importance is not None and (not number or not 0 <= importance <= 1):
            raise RagInputError(f"importance must be a number within 0..1, got {importance!r}")
        reserved = sorted(k for k in meta if k.startswith("_rag_"))
        if reserved:
            raise RagInputError(f"metadata keys starting with '_rag_' are reserved: {reserved}")
        scope = self.access.write_scope()
        self.access.check_new_metadata(meta, scope)
        return index_document(
            self.config,
            self.embedding,
            source_id,
            body,
            metadata=meta,
            namespace=folded,
            reindex=reindex,
            importance=None if importance is None else float(importance),
            access=self.access,
            scope=scope,
        )

    def remove(self, id: str, *, namespace: str | None = None) -> int:
        """Delete every chunk of source ``id`` (from the lexical store too); returns how many it had."""
        source_id = check_source_id(id)
        folded = self.namespace(namespace)
        scope = self.access.write_scope()
        return remove_document(self.config, source_id, namespace=folded, access=self.access, scope=scope)

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
        mode: Mode | None = None,
        group_by: GroupBy = None,
        chunks_per_source: int = 1,
    ) -> RetrievalResult:
        """Ranked chunks, a prompt-ready ``context`` and deduplicated ``sources`` for ``query``.

        ``filter`` is merged under ``rls_filter(auth)`` (RLS keys win). ``mode``: ``"hybrid"`` (dense +
        lexical fused with RRF; an error when the rag has no lexical leg), ``"dense"``, ``"lexical"``,
        or ``"auto"`` (the default: hybrid whenever a lexical leg exists; ``define_rag(hybrid=...)``
        sets it). ``group_by="source"`` ranks documents instead of chunks: ``top_k`` documents, each with
        its best ``chunks_per_source`` chunks (``result.groups``). ``min_score`` thresholds the dense
        leg's cosine similarity. ``rerank=False`` / ``transform_query=False`` skip those for this call.
        """
        text = check_query(query)
        ceiling = self.store.capabilities.max_top_k
        k = check_count("top_k", self.config.top_k if top_k is None else top_k, ceiling)
        pool = check_count("candidates", candidates, ceiling) if candidates is not None else None
        per_source = check_count("chunks_per_source", chunks_per_source, None)
        caller_filter = check_mapping(filter, "filter", _FILTER_EXAMPLE)
        if group_by not in (None, "source"):
            raise RagInputError(f"group_by must be None or 'source', got {group_by!r}")
        chosen = self._mode(mode)
        folded = self.namespace(namespace)
        rls = self.access.read_scope()
        options = RetrieveOptions(
            top_k=k,
            namespace=folded,
            filter=merge_rls(caller_filter, rls),
            min_score=self.config.min_score if min_score is None else min_score,
            rerank=_pick(rerank, self.config.rerank),
            transform_query=_pick(transform_query, self.config.transform_query),
            candidates=pool or self.config.candidates or 0,
            mode=chosen,
            group_by=group_by,
            chunks_per_source=per_source,
        )
        return retrieve(self.config, self.embedding, text, options, conversation_id=self.conversation_id)

    def _mode(self, mode: Mode | None) -> Mode:
        if mode is not None and mode not in MODES:
            raise RagInputError(f"mode must be one of {list(MODES)}, got {mode!r}")
        if mode is None or mode == "auto":
            declared = self.config.hybrid
            mode = "auto" if declared is None else ("hybrid" if declared else "dense")
        if mode in ("hybrid", "lexical") and not has_lexical_leg(self.config):
            raise HybridUnavailableError(
                f"mode={mode!r} needs a lexical leg, and rag {self.config.index!r} has none: pass "
                "lexical_store=bm25_lexical_store() (or sql_lexical_store(url)) to define_rag, use a "
                "store with a built-in lexical index, or ask for mode='dense'"
            )
        return mode

    def as_tool(
        self,
        *,
        name: str = "search_docs",
        description: str | None = None,
        namespace: str | None = None,
        top_k: int | None = None,
        filter: Mapping[str, Any] | None = None,
    ) -> RagTool:
        """This rag as an agent tool (pass it in ``define_agent(tools=[...])``).

        The namespace and filter are fixed here by the server, never chosen by the model, and the
        bound identity's ``rls_filter`` still applies. A multi-tenant rag (``require_namespace=True``)
        needs ``namespace=`` here; it is checked now, not at the first call.
        """
        self.namespace(namespace)
        fixed = check_mapping(filter, "filter", _FILTER_EXAMPLE)

        def search(query: str) -> RetrievalResult:
            return self.retrieve(query, namespace=namespace, top_k=top_k, filter=fixed)

        return rag_tool(search, index=self.config.index, name=name, description=description)


def define_rag(
    *,
    embedding: Embedder | None = None,
    store: VectorStore | None = None,
    index: str = "default",
    chunk: Chunker | None = None,
    **options: Any,
) -> Rag:
    """Declare a rag and return it unbound (the system identity; call ``.bind(auth=...)`` per request).

    ``embedding``: an ``Embedder`` (default: offline MiniLM if installed, else the hashing embedder).
    ``store``: a ``VectorStore`` (default: the embedded default store for ``index``). ``chunk``: a chunker
    (default ``default_chunker()``). Other options (see ``RagConfig``): ``top_k``, ``candidates``,
    ``lexical_store``, ``lexical_top_k``, ``hybrid`` (True: require a lexical leg; False: dense only;
    None: hybrid whenever a lexical leg exists), ``rrf_k``, ``rerank``, ``transform_query``,
    ``rls_filter``, ``require_namespace``, ``allow_shared_namespace`` (single-tenant: no warning for a
    namespace-less call), ``embedding_model_version``, ``cache_embeddings``,
    ``max_embedding_dimensions``, ``min_score``, ``chunk_context=(before, after)``, ``chunk_headers``
    (default True: a document's ``metadata["title"]`` heads each of its chunks, a contextual chunk
    header that is embedded, matched lexically and shown in ``context``).
    """
    unknown = set(options) - set(RagConfig.__dataclass_fields__)
    if unknown:
        raise RagConfigurationError(f"define_rag got unknown option(s) {sorted(unknown)}; see RagConfig")
    if not isinstance(index, str) or not VERSION_PATTERN.match(index):
        raise RagConfigurationError(f"index must match ^[A-Za-z0-9._-]{{1,40}}$, got {index!r}")
    version = options.get("embedding_model_version")
    if version is not None and not VERSION_PATTERN.match(version):
        raise RagConfigurationError(
            "embedding_model_version must match ^[A-Za-z0-9._-]{1,40}$, got " + repr(version)
        )
    if options.get("require_namespace") and options.get("allow_shared_namespace"):
        raise RagConfigurationError(
            "require_namespace=True and allow_shared_namespace=True contradict each other: pick one"
        )
    if options.get("top_k", 5) < 1 or options.get("rrf_k", DEFAULT_RRF_K) < 0:
        raise RagConfigurationError("top_k must be >= 1 and rrf_k >= 0")
    rls = options.get("rls_filter")
    if rls is not None and not callable(rls):
        raise RagConfigurationError("rls_filter must be a callable(auth) -> filter mapping")
    config = RagConfig(
        embedding=embedding if embedding is not None else default_embedder(),
        store=store if store is not None else default_vector_store(index),
        index=index,
        chunk=chunk or default_chunker(),
        **options,
    )
    if config.hybrid is True and not has_lexical_leg(config):
        raise HybridUnavailableError(
            "hybrid=True needs a lexical leg: pass lexical_store=bm25_lexical_store() (or "
            "sql_lexical_store(url)), or a store with a built-in lexical index"
        )
    return Rag(replace(config))
