"""Retrieval, usable without agents: ``define_rag``, chunkers, stores, hybrid BM25 + RRF, rerank, RLS.

``rag`` imports nothing from ``lunora_jobs``: its errors are in ``rag.errors``, its environment in
``rag.settings``. Example::

    from rag import define_rag
    docs = define_rag(index="docs", allow_shared_namespace=True)
    docs.index("faq", "Reset your password from the account page.")
    docs.retrieve("how do I reset my password?").context
"""

import importlib
from typing import Any

from rag import errors
from rag.chunkers import (
    Chunker,
    default_chunker,
    fixed_chunker,
    markdown_chunker,
    sentence_chunker,
    token_chunker,
)
from rag.cost import (
    PRICES,
    ModelCost,
    ModelPrice,
    TokenUsage,
    estimate_model_cost,
    resolve_model_cost,
    set_cost_attributes,
)
from rag.define import Rag, RagConfig, define_rag
from rag.embeddings.base import Embedder
from rag.embeddings.hashing import HashingEmbedder
from rag.filters import matches_metadata_filter, merge_rls
from rag.fusion import DEFAULT_RRF_K, reciprocal_rank_fusion
from rag.indexing import IndexResult
from rag.lexical import (
    Bm25LexicalStore,
    LexicalRecord,
    LexicalStore,
    SqlLexicalStore,
    bm25_lexical_store,
    sql_lexical_store,
)
from rag.rerank import Reranker, batch_reranker, score_reranker
from rag.retrieval import RetrievalResult, RetrievedChunk, Source, SourceGroup
from rag.settings import RagSettings
from rag.sources import DirectorySource, RagSource, SourceObject, SyncReport, define_rag_source
from rag.stores.base import StoreCapabilities, VectorHit, VectorRecord, VectorStore
from rag.stores.memory import MemoryStore
from rag.tool import RagTool
from rag.transform import TransformContext

# Backends with optional extras load on first use (PEP 562), so ``import rag`` needs none of them.
_LAZY = {
    "EdgeStore": "rag.stores.qdrant_edge",
    "QdrantStore": "rag.stores.qdrant",
    "SqlVectorStore": "rag.stores.sql",
    "default_store": "rag.stores.default",
    "MiniLMEmbedder": "rag.embeddings.minilm",
    "OpenAIEmbedder": "rag.embeddings.openai",
}


def __getattr__(name: str) -> Any:
    """Import an optional backend on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rag' has no attribute {name!r}")


__all__ = [
    "DEFAULT_RRF_K",
    "PRICES",
    "Bm25LexicalStore",
    "Chunker",
    "DirectorySource",
    "EdgeStore",
    "Embedder",
    "HashingEmbedder",
    "IndexResult",
    "LexicalRecord",
    "LexicalStore",
    "MemoryStore",
    "MiniLMEmbedder",
    "ModelCost",
    "ModelPrice",
    "OpenAIEmbedder",
    "QdrantStore",
    "Rag",
    "RagConfig",
    "RagSettings",
    "RagSource",
    "RagTool",
    "Reranker",
    "RetrievalResult",
    "RetrievedChunk",
    "Source",
    "SourceGroup",
    "SourceObject",
    "SqlLexicalStore",
    "SqlVectorStore",
    "StoreCapabilities",
    "SyncReport",
    "TokenUsage",
    "TransformContext",
    "VectorHit",
    "VectorRecord",
    "VectorStore",
    "batch_reranker",
    "bm25_lexical_store",
    "default_chunker",
    "default_store",
    "define_rag",
    "define_rag_source",
    "errors",
    "estimate_model_cost",
    "fixed_chunker",
    "markdown_chunker",
    "matches_metadata_filter",
    "merge_rls",
    "reciprocal_rank_fusion",
    "resolve_model_cost",
    "score_reranker",
    "sentence_chunker",
    "set_cost_attributes",
    "sql_lexical_store",
    "token_chunker",
]
