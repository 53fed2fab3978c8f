"""A rag's declaration (``RagConfig``) and one retrieve call's resolved options (``RetrieveOptions``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from rag.chunkers import Chunker, default_chunker
from rag.embeddings.base import Embedder
from rag.fusion import DEFAULT_RRF_K
from rag.lexical.base import LexicalStore
from rag.rerank import Reranker
from rag.stores.base import VectorStore
from rag.transform import QueryTransform

VERSION_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,40}$")
RlsFilter = Callable[[Any], "Mapping[str, Any] | None"]
Mode = Literal["auto", "hybrid", "dense", "lexical"]
MODES: tuple[str, ...] = ("auto", "hybrid", "dense", "lexical")
GroupBy = Literal["source"] | None


@dataclass(frozen=True)
class RagConfig:
    """A rag declaration; see ``define_rag`` for each field."""

    embedding: Embedder
    store: VectorStore
    index: str = "default"
    chunk: Chunker = field(default_factory=default_chunker)
    top_k: int = 5
    candidates: int | None = None
    lexical_store: LexicalStore | None = None
    lexical_top_k: int | None = None
    hybrid: bool | None = None
    rrf_k: int = DEFAULT_RRF_K
    rerank: Reranker | None = None
    transform_query: QueryTransform | None = None
    rls_filter: RlsFilter | None = None
    require_namespace: bool = False
    allow_shared_namespace: bool = False
    embedding_model_version: str | None = None
    cache_embeddings: int = 0
    max_embedding_dimensions: int | Literal[False] | None = None
    min_score: float | None = None
    chunk_context: tuple[int, int] = (0, 0)
    chunk_headers: bool = True


@dataclass(frozen=True, slots=True)
class RetrieveOptions:
    """One retrieve call's resolved options (namespace already folded, filter already RLS-merged)."""

    top_k: int
    namespace: str | None
    filter: dict[str, Any] | None
    min_score: float | None
    rerank: Reranker | None
    transform_query: QueryTransform | None
    candidates: int
    mode: Mode = "auto"
    group_by: GroupBy = None
    chunks_per_source: int = 1
