"""The store contract over every embedded backend: MemoryStore, Qdrant local mode, EdgeStore, SQLite."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from store_contract import SqlStoreContract, StoreContract

from rag.stores.qdrant import QdrantStore
from rag.stores.qdrant_edge import EdgeStore
from rag.stores.sql import SqlVectorStore

HAS_MEMORY = importlib.util.find_spec("rag.stores.memory") is not None


@pytest.mark.skipif(not HAS_MEMORY, reason="rag.stores.memory (helper F) not landed yet")
class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Any:
        from rag.stores.memory import MemoryStore

        return MemoryStore()


class TestQdrantLocalMemory(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[QdrantStore]:
        s = QdrantStore(path=":memory:", collection="contract", indexed_fields={"tenant": "keyword"})
        yield s
        s.close()


class TestQdrantLocalDisk(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[QdrantStore]:
        s = QdrantStore(path=tmp_path / "q", collection="contract")
        yield s
        s.close()


class TestEdgeStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[EdgeStore]:
        s = EdgeStore(tmp_path / "edge", indexed_fields={"tenant": "keyword", "year": "float"})
        yield s
        s.close()


class TestSqliteStore(SqlStoreContract):
    @pytest.fixture
    def store(self, sqlite_url: str) -> SqlVectorStore:
        return SqlVectorStore(sqlite_url)
