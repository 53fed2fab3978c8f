"""A namespace-less call logs one warning per bound rag (shared-namespace hazard), unless the rag
declares ``allow_shared_namespace=True``; ``require_namespace=True`` makes it an error instead."""

from __future__ import annotations

import logging

import pytest

from rag import define_rag
from rag.embeddings.hashing import HashingEmbedder
from rag.errors import NamespaceRequiredError, RagConfigurationError
from rag.stores.memory import MemoryStore


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name.startswith("rag")
    ]


def test_one_warning_per_bound_context(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    docs = define_rag(embedding=HashingEmbedder(32), store=MemoryStore(), index="kb")
    docs.index("a", "Alpha text about keys.")
    docs.retrieve("keys")
    docs.remove("a")
    messages = _warnings(caplog)
    assert len(messages) == 1
    assert "'kb'" in messages[0] and "allow_shared_namespace=True" in messages[0]
    assert "require_namespace=True" in messages[0]

    request = docs.bind(auth={"org": "acme"})  # a new bound context warns again, once
    request.retrieve("keys")
    request.retrieve("keys")
    assert len(_warnings(caplog)) == 2


def test_no_warning_with_a_namespace_or_when_allowed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    docs = define_rag(embedding=HashingEmbedder(32), store=MemoryStore())
    docs.index("a", "Alpha text.", namespace="t1")
    docs.retrieve("alpha", namespace="t1")
    single = define_rag(embedding=HashingEmbedder(32), store=MemoryStore(), allow_shared_namespace=True)
    single.index("a", "Alpha text.")
    single.bind().retrieve("alpha")
    assert _warnings(caplog) == []


def test_require_namespace_is_an_error_not_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    tenants = define_rag(embedding=HashingEmbedder(32), store=MemoryStore(), require_namespace=True)
    with pytest.raises(NamespaceRequiredError):
        tenants.retrieve("alpha")
    assert _warnings(caplog) == []
    with pytest.raises(RagConfigurationError, match="allow_shared_namespace"):
        define_rag(
            embedding=HashingEmbedder(32),
            store=MemoryStore(),
            require_namespace=True,
            allow_shared_namespace=True,
        )
