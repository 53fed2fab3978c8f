"""Lexical (keyword) retrieval: one BM25 kernel, an in-memory store and a durable SQL store."""

from rag.lexical.base import LexicalRecord, LexicalStore
from rag.lexical.kernel import Bm25Params, tokenize
from rag.lexical.memory import Bm25LexicalStore, bm25_lexical_store
from rag.lexical.sql import SqlLexicalStore, sql_lexical_store

__all__ = [
    "Bm25LexicalStore",
    "Bm25Params",
    "LexicalRecord",
    "LexicalStore",
    "SqlLexicalStore",
    "bm25_lexical_store",
    "sql_lexical_store",
    "tokenize",
]
