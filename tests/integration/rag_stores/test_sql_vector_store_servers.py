"""The store contract for SqlVectorStore on the real PostgreSQL and MariaDB servers."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.stores.sql import SqlVectorStore

_spec = importlib.util.spec_from_file_location(
    "rag_store_contract", Path(__file__).parents[2] / "unit" / "rag_stores" / "store_contract.py"
)
assert _spec and _spec.loader
contract = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(contract)

pytestmark = pytest.mark.integration


class TestPostgresStore(contract.SqlStoreContract):  # type: ignore[name-defined,misc]
    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[SqlVectorStore]:
        s = SqlVectorStore(pg_url)
        yield s
        s.engine.dispose()


class TestMariaDbStore(contract.SqlStoreContract):  # type: ignore[name-defined,misc]
    @pytest.fixture
    def store(self, mysql_url: str) -> Iterator[SqlVectorStore]:
        s = SqlVectorStore(mysql_url)
        yield s
        s.engine.dispose()
