"""matches_metadata_filter: every operator, dot paths, and the fail-closed cases; merge_rls."""

from __future__ import annotations

import pytest

from rag.filters import matches_metadata_filter as match
from rag.filters import merge_rls

META = {
    "org": "acme",
    "n": 5,
    "score": 0.5,
    "flag": True,
    "tags": ["a", "b"],
    "owner": {"team": {"id": "t1"}},
}


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"org": "acme"}, True),
        ({"org": "other"}, False),
        ({"org": {"$eq": "acme"}}, True),
        ({"org": {"$ne": "acme"}}, False),
        ({"org": {"$ne": "x"}}, True),
        ({"missing": {"$ne": "x"}}, True),
        ({"n": {"$lt": 6}}, True),
        ({"n": {"$lt": 5}}, False),
        ({"n": {"$lte": 5}}, True),
        ({"n": {"$gt": 4.5}}, True),
        ({"n": {"$gt": 5}}, False),
        ({"n": {"$gte": 5, "$lt": 10}}, True),
        ({"n": {"$gte": 6}}, False),
        ({"org": {"$in": ["acme", "x"]}}, True),
        ({"org": {"$in": ["x"]}}, False),
        ({"org": {"$nin": ["x"]}}, True),
        ({"org": {"$nin": ["acme"]}}, False),
        ({"missing": {"$nin": ["acme"]}}, True),
        ({"owner.team.id": "t1"}, True),
        ({"owner.team.id": "t2"}, False),
        ({"owner.team.id": {"$in": ["t1"]}}, True),
        ({"owner.team": {"id": "t1"}}, True),
        ({"org": "acme", "n": {"$gt": 1}}, True),
        ({"org": "acme", "n": {"$gt": 9}}, False),
        ({"flag": True}, True),
        ({"tags": ["a", "b"]}, True),
    ],
)
def test_operators(flt: dict, expected: bool) -> None:
    assert match(META, flt) is expected


@pytest.mark.parametrize(
    "flt",
    [
        {"org": {"$regex": "ac.*"}},  # unknown operator
        {"org": {"$eq": "acme", "$exists": True}},  # one unknown among known ones
        {"$or": [{"org": "acme"}]},  # top-level logical operators are not implemented
        {"org": {"$gt": 3}},  # range over incomparable values (str vs int)
        {"n": {"$gt": "3"}},
        {"n": {"$lt": None}},
        {"n": {"$gt": float("nan")}},
        {"org": {"$in": "acme"}},  # malformed operand: not a list
        {"org": {"$nin": "zzz"}},
        {"flag": 1},  # a bool is not the number 1
        {"n": True},
        {"missing": "x"},
        {"missing": {"$eq": None}},
        {"missing": {"$gte": 0}},
        {"owner.team.id.deeper": "t1"},
    ],
)
def test_fails_closed(flt: dict) -> None:
    assert match(META, flt) is False


def test_no_metadata_fails_closed_but_no_filter_admits() -> None:
    assert match(None, {"org": "acme"}) is False
    assert match({}, {"org": {"$ne": "x"}}) is False
    assert match({}, None) is True
    assert match(META, {}) is True


def test_merge_rls_keys_win_and_caller_can_only_narrow() -> None:
    merged = merge_rls({"org": "evil", "tag": "x"}, {"org": "acme"})
    assert merged == {"org": "acme", "tag": "x"}
    assert merge_rls(None, {"org": "acme"}) == {"org": "acme"}
    assert merge_rls({"tag": "x"}, None) == {"tag": "x"}
    assert merge_rls(None, None) is None
    # A caller's operator on the RLS key is replaced, not combined into a wider condition.
    assert merge_rls({"org": {"$in": ["acme", "evil"]}}, {"org": "acme"}) == {"org": "acme"}
