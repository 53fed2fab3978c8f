"""plan_batches: request-sized batches under an item cap and a token budget, order preserved."""

from __future__ import annotations

import doctest

import rag.embeddings.batching as batching
from rag.embeddings.batching import plan_batches


def test_item_cap_and_budget_and_order() -> None:
    texts = [f"t{i}" for i in range(7)]
    batches = list(plan_batches(texts, len, max_items=3, max_tokens=1000))
    assert batches == [["t0", "t1", "t2"], ["t3", "t4", "t5"], ["t6"]]
    assert [t for b in batches for t in b] == texts
    assert list(plan_batches(["aa", "bb", "cc"], len, max_items=10, max_tokens=4)) == [["aa", "bb"], ["cc"]]


def test_oversized_text_travels_alone_and_empty_input_yields_nothing() -> None:
    # Splitting one text would change its embedding; the provider refuses it if it must.
    assert list(plan_batches(["a", "x" * 50, "b"], len, max_items=10, max_tokens=10)) == [
        ["a"], ["x" * 50], ["b"]
    ]
    assert list(plan_batches([], len, max_items=10, max_tokens=10)) == []


def test_docstring_examples() -> None:
    assert doctest.testmod(batching).failed == 0
