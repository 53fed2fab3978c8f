"""The one BM25 kernel both lexical stores score through, so swapping stores never moves a ranking.

Okapi BM25 with the Lucene IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (never negative). Query terms
are deduplicated and visited in sorted order, so each document's score is the same float sum whichever
store gathered the postings; ties break by id.

Example::

    postings = {"cat": {"a": 2, "b": 1}}
    score_documents(["cat"], postings, {"a": 4, "b": 9}, n_docs=2, total_length=13)
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

MAX_TERM_CHARS = 64
_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Bm25Params:
    """``k1`` saturates term frequency; ``b`` scales length normalisation (0 = none, 1 = full)."""

    k1: float = 1.2
    b: float = 0.75


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (Unicode ``\\w+``), each capped at 64 characters."""
    return [token[:MAX_TERM_CHARS] for token in _TOKEN.findall(text.casefold())]


def term_frequencies(text: str) -> tuple[Counter[str], int]:
    """``(term -> count, document length in tokens)``."""
    tokens = tokenize(text)
    return Counter(tokens), len(tokens)


def query_terms(query: str) -> list[str]:
    """The distinct terms of a query, sorted (the summation order of ``score_documents``)."""
    return sorted(set(tokenize(query)))


def idf(n_docs: int, df: int) -> float:
    """Inverse document frequency of a term found in ``df`` of ``n_docs`` documents."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def score_documents(
    terms: Iterable[str],
    postings: Mapping[str, Mapping[str, int]],
    doc_lengths: Mapping[str, int],
    *,
    n_docs: int,
    total_length: int,
    params: Bm25Params = Bm25Params(),
) -> dict[str, float]:
    """BM25 score of every document holding at least one term.

    ``postings[term]`` must list *every* document of the namespace holding ``term`` (it is the df),
    not only the ones a filter admits -- filtering happens after scoring.
    """
    if n_docs <= 0:
        return {}
    avgdl = total_length / n_docs if total_length > 0 else 1.0
    scores: dict[str, float] = {}
    for term in sorted(set(terms)):
        docs = postings.get(term)
        if not docs:
            continue
        weight = idf(n_docs, len(docs))
        for doc_id in sorted(docs):
            tf = docs[doc_id]
            norm = params.k1 * (1.0 - params.b + params.b * doc_lengths[doc_id] / avgdl)
            scores[doc_id] = scores.get(doc_id, 0.0) + weight * tf * (params.k1 + 1.0) / (tf + norm)
    return scores


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """``(id, score)`` best first, ties by id."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def take(
    ranking: Iterable[tuple[str, float]], top_k: int, admit: Callable[[str], bool]
) -> list[tuple[str, float]]:
    """The first ``top_k`` entries of ``ranking`` that ``admit`` accepts."""
    out: list[tuple[str, float]] = []
    for doc_id, score in ranking:
        if len(out) >= top_k:
            break
        if admit(doc_id):
            out.append((doc_id, score))
    return out
