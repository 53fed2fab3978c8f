"""The behaviour every ``VectorStore`` owes ``define_rag``.

Subclass ``StoreContract`` with a ``store`` fixture (a fresh, empty store).

Filters are checked two ways: against hand-written expectations, and against the reference
``rag.filters.matches_metadata_filter`` -- a store may be narrower than the reference where its
native filter cannot express a predicate exactly, never wider.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rag.errors import NamespaceTooLargeError
from rag.filters import matches_metadata_filter
from rag.stores.base import StoreCapabilities, VectorRecord, VectorStore

DIM = 8


def vec(seed: int) -> list[float]:
    """A deterministic unit vector."""
    v = np.random.default_rng(seed).normal(size=DIM)
    return [float(x) for x in v / np.linalg.norm(v)]


METAS: dict[str, dict[str, Any]] = {
    "a": {"tenant": "acme", "year": 2020, "score": 0.5, "tags": "x", "flag": True, "doc": {"lang": "en"}},
    "b": {"tenant": "acme", "year": 2021, "score": 1.5, "tags": "y", "flag": False, "doc": {"lang": "fr"}},
    "c": {"tenant": "zeta", "year": 2022, "score": 2.5, "flag": True, "doc": {"lang": "en"}},
    "d": {"tenant": "zeta", "year": 2023.0, "score": 3.5, "tags": "x"},
    "e": {},
}

# filter -> exact expected ids (stores must agree with the reference here)
EXACT: list[tuple[dict[str, Any], set[str]]] = [
    ({"tenant": "acme"}, {"a", "b"}),
    ({"tenant": {"$eq": "zeta"}}, {"c", "d"}),
    ({"tenant": {"$ne": "acme"}}, {"c", "d"}),
    ({"tags": {"$ne": "x"}}, {"b", "c"}),  # a missing key passes $ne; no metadata never passes
    ({"year": {"$lt": 2021}}, {"a"}),
    ({"year": {"$lte": 2021}}, {"a", "b"}),
    ({"year": {"$gt": 2022}}, {"d"}),
    ({"year": {"$gte": 2022}}, {"c", "d"}),
    ({"year": 2023}, {"d"}),  # 2023 == 2023.0
    ({"score": {"$gt": 1.0, "$lt": 3.0}}, {"b", "c"}),
    ({"score": 1.5}, {"b"}),
    ({"tenant": {"$in": ["zeta", "nobody"]}}, {"c", "d"}),
    ({"year": {"$in": [2020, 2023]}}, {"a", "d"}),
    ({"tenant": {"$nin": ["acme"]}}, {"c", "d"}),
    ({"tags": {"$nin": ["y"]}}, {"a", "c", "d"}),
    ({"flag": True}, {"a", "c"}),
    ({"flag": {"$eq": False}}, {"b"}),
    ({"doc.lang": "en"}, {"a", "c"}),
    ({"doc.lang": {"$in": ["fr"]}, "tenant": "acme"}, {"b"}),
    ({"tenant": "acme", "year": {"$gte": 2021}}, {"b"}),
]

# fail closed: nothing may come back
CLOSED: list[dict[str, Any]] = [
    {"tenant": {"$regex": "ac.*"}},
    {"tenant": {"$eq": "acme", "$like": "a"}},
    {"$or": [{"tenant": "acme"}, {"tenant": "zeta"}]},
    {"year": {"$gt": "2020"}},  # number vs string: incomparable
    {"tenant": {"$in": "acme"}},  # malformed operand
    {"tenant": {"$in": []}},
    {"missing": "x"},
    {"year": {"$gt": float("nan")}},
]


def load(store: VectorStore, namespace: str | None = "ns1") -> None:
    """Five records a..e in ``namespace`` (record i is nearest to ``vec(i)``)."""
    records = [
        VectorRecord(id=k, vector=vec(i), text=f"text of {k}", metadata=METAS[k]) for i, k in enumerate(METAS)
    ]
    store.upsert(records, namespace=namespace)


def ids(hits: list[Any]) -> list[str]:
    """Hit ids in order."""
    return [h.id for h in hits]


class StoreContract:
    """Subclass and provide a ``store`` fixture (a fresh, empty store)."""

    def test_capabilities(self, store: VectorStore) -> None:
        assert isinstance(store.capabilities, StoreCapabilities)
        assert isinstance(store, VectorStore)

    def test_empty_store_returns_nothing(self, store: VectorStore) -> None:
        assert store.query(vec(0), top_k=3, namespace="ns1") == []
        assert store.get_by_ids(["a"], namespace="ns1") == []
        store.delete_by_ids(["a"], namespace="ns1")  # no error

    def test_query_orders_best_first(self, store: VectorStore) -> None:
        load(store)
        hits = store.query(vec(2), top_k=5, namespace="ns1")
        assert hits[0].id == "c"
        assert hits[0].score == pytest.approx(1.0, abs=1e-4)
        assert hits[0].text == "text of c" and hits[0].metadata == METAS["c"]
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        expected = sorted(METAS, key=lambda k: -float(np.dot(vec(2), vec(list(METAS).index(k)))))
        assert ids(hits) == expected
        assert len(store.query(vec(2), top_k=2, namespace="ns1")) == 2

    def test_query_is_cosine_not_dot(self, store: VectorStore) -> None:
        store.upsert([VectorRecord("big", [10.0 * x for x in vec(1)], "t")], namespace="n")
        hits = store.query(vec(1), top_k=1, namespace="n")
        assert hits[0].score == pytest.approx(1.0, abs=1e-4)

    def test_upsert_replaces_by_id(self, store: VectorStore) -> None:
        load(store)
        store.upsert([VectorRecord("a", vec(3), "new text", {"tenant": "new"})], namespace="ns1")
        [hit] = store.get_by_ids(["a"], namespace="ns1")
        assert (hit.text, hit.metadata) == ("new text", {"tenant": "new"})
        top = store.query(vec(3), top_k=2, namespace="ns1")
        assert set(ids(top)) == {"a", "d"}
        assert len(store.query(vec(0), top_k=50, namespace="ns1")) == 5

    def test_get_by_ids_in_given_order_skipping_missing(self, store: VectorStore) -> None:
        load(store)
        hits = store.get_by_ids(["c", "nope", "a"], namespace="ns1")
        assert ids(hits) == ["c", "a"]
        assert all(h.score == 0 for h in hits)
        assert hits[0].text == "text of c"

    def test_delete_by_ids(self, store: VectorStore) -> None:
        load(store)
        store.delete_by_ids(["a", "missing"], namespace="ns1")
        assert store.get_by_ids(["a", "b"], namespace="ns1")[0].id == "b"
        assert "a" not in ids(store.query(vec(0), top_k=10, namespace="ns1"))

    def test_namespaces_are_isolated(self, store: VectorStore) -> None:
        load(store, "ns1")
        store.upsert([VectorRecord("a", vec(0), "other tenant", {"tenant": "acme"})], namespace="ns2")
        store.upsert([VectorRecord("z", vec(0), "default", {"tenant": "acme"})], namespace=None)
        assert ids(store.query(vec(0), top_k=10, namespace="ns2")) == ["a"]
        assert ids(store.query(vec(0), top_k=10, namespace=None)) == ["z"]
        assert store.get_by_ids(["a"], namespace="ns2")[0].text == "other tenant"
        assert store.get_by_ids(["a"], namespace="ns1")[0].text == "text of a"
        assert store.get_by_ids(["z"], namespace="ns1") == []
        store.delete_by_ids(["a"], namespace="ns2")
        assert store.get_by_ids(["a"], namespace="ns1") != []
        assert ids(store.query(vec(0), top_k=10, namespace="ns3", filter={"tenant": "acme"})) == []

    @pytest.mark.parametrize(("flt", "expected"), EXACT, ids=[str(f) for f, _ in EXACT])
    def test_filter_operators(self, store: VectorStore, flt: dict[str, Any], expected: set[str]) -> None:
        load(store)
        reference = {k for k, m in METAS.items() if matches_metadata_filter(m, flt)}
        assert reference == expected  # the table itself agrees with the reference language
        got = store.query(vec(0), top_k=10, namespace="ns1", filter=flt)
        assert set(ids(got)) == expected
        scores = [h.score for h in got]
        assert scores == sorted(scores, reverse=True)

    @pytest.mark.parametrize("flt", CLOSED, ids=[str(f) for f in CLOSED])
    def test_filter_fails_closed(self, store: VectorStore, flt: dict[str, Any]) -> None:
        load(store)
        assert store.query(vec(0), top_k=10, namespace="ns1", filter=flt) == []

    def test_filter_never_wider_than_reference(self, store: VectorStore) -> None:
        # Arrays, string ranges and object equality: a store may be narrower, never wider.
        metas = {
            "p": {"tags": ["x", "y"], "name": "bob", "obj": {"k": 1}},
            "q": {"tags": "x", "name": "alice", "obj": {"k": 2}},
        }
        store.upsert([VectorRecord(k, vec(i), k, m) for i, (k, m) in enumerate(metas.items())], namespace="w")
        filters: list[dict[str, Any]] = [
            {"tags": "x"},
            {"tags": {"$in": ["y"]}},
            {"name": {"$gt": "b"}},
            {"obj": {"k": 1}},
            {"tags": {"$ne": "x"}},
            {"obj.k": {"$gte": 2}},
        ]
        for flt in filters:
            got = set(ids(store.query(vec(0), top_k=10, namespace="w", filter=flt)))
            reference = {k for k, m in metas.items() if matches_metadata_filter(m, flt)}
            assert got <= reference, flt


class SqlStoreContract(StoreContract):
    """Extra behaviour of ``SqlVectorStore``: the ``max_scan`` refusal."""

    def test_max_scan_refuses_a_large_namespace(self, store: Any) -> None:
        load(store, "big")
        store.max_scan = 4
        with pytest.raises(NamespaceTooLargeError, match="max_scan=4"):
            store.query(vec(0), top_k=1, namespace="big")
        store.upsert([VectorRecord("x", vec(0), "t")], namespace="small")
        assert ids(store.query(vec(0), top_k=1, namespace="small")) == ["x"]
        store.max_scan = 5
        assert len(store.query(vec(0), top_k=10, namespace="big")) == 5
