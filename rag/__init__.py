"""Retrieval, usable without agents: ``define_rag``, chunkers, stores, hybrid BM25 + RRF, rerank, RLS.

Example::

    from rag import define_rag, sentence_chunker
    docs = define_rag(index="docs", chunk=sentence_chunker(size=800, overlap=100))
    docs.index("faq", "Reset your password from the account page.")
    docs.retrieve("how do I reset my password?").context
"""

import importlib
from typing import Any

from rag.chunkers import Chunker, fixed_chunker, markdown_chunker, sentence_chunker, token_chunker
from rag.cost import (
    PRICES,
    ModelCost,
    ModelPrice,
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
from rag.retrieval import RetrievalResult, RetrievedChunk, Source
from rag.sources import DirectorySource, RagSource, SourceObject, SyncReport, define_rag_source
from rag.stores.base import StoreCapabilities, VectorHit, VectorRecord, VectorStore
from rag.stores.memory import MemoryStore
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
    "RagSource",
    "Reranker",
    "RetrievalResult",
    "RetrievedChunk",
    "Source",
    "SourceObject",
    "SqlLexicalStore",
    "SqlVectorStore",
    "StoreCapabilities",
    "SyncReport",
    "TransformContext",
    "VectorHit",
    "VectorRecord",
    "VectorStore",
    "batch_reranker",
    "bm25_lexical_store",
    "default_store",
    "define_rag",
    "define_rag_source",
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
