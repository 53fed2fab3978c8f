"""The one BM25 kernel every lexical leg scores through, so swapping stores never moves a ranking.

Okapi BM25 with the Lucene IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (never negative) over the
namespace, and a *fixed* reference length ``avgdl`` instead of the corpus mean. The fixed length is
what lets the Qdrant stores score exactly the same way: Qdrant multiplies a stored sparse weight by an
IDF it computes at query time, so the per-document part of BM25 (term-frequency saturation and length
normalisation) must be known at write time -- ``document_weights`` -- and cannot depend on a mean
that moves with every write. Memory and SQL stores use the same ``document_weights``; the Qdrant
stores store them as sparse vectors keyed by ``term_id`` (a 32-bit BLAKE2b of the term) and ask
Qdrant for namespace-scoped IDF. Query terms are deduplicated and weigh 1 each; ties break by id.

Example::

    postings = {"cat": {"a": 2, "b": 1}}
    score_documents(["cat"], postings, {"a": 4, "b": 9}, n_docs=2)
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

MAX_TERM_CHARS = 64
_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Bm25Params:
    """``k1`` saturates term frequency; ``b`` scales length normalisation (0 = none, 1 = full) against
    the reference length ``avgdl`` (tokens)."""

    k1: float = 1.2
    b: float = 0.75
    avgdl: float = 150.0


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


def term_id(term: str) -> int:
    """A stable 32-bit id of a term (sparse-vector index in the Qdrant stores)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "little")


def document_weights(
    tf: Mapping[str, int], length: int, params: Bm25Params = Bm25Params()
) -> dict[str, float]:
    """The per-document BM25 factor of each term: ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``."""
    norm = params.k1 * (1.0 - params.b + params.b * length / params.avgdl)
    return {term: count * (params.k1 + 1.0) / (count + norm) for term, count in tf.items()}


def sparse_document(text: str, params: Bm25Params = Bm25Params()) -> tuple[list[int], list[float]]:
    """``(indices, values)`` of a text's BM25 document weights, keyed by ``term_id``."""
    tf, length = term_frequencies(text)
    weights: dict[int, float] = {}
    for term, weight in document_weights(tf, length, params).items():
        key = term_id(term)  # a 32-bit collision sums two terms: rare, and only ever adds score
        weights[key] = weights.get(key, 0.0) + weight
    keys = sorted(weights)
    return keys, [weights[k] for k in keys]


def sparse_query(text: str) -> tuple[list[int], list[float]]:
    """``(indices, values)`` of a query: each distinct term once, weight 1."""
    keys = sorted({term_id(t) for t in query_terms(text)})
    return keys, [1.0] * len(keys)


def idf(n_docs: int, df: int) -> float:
    """Inverse document frequency of a term found in ``df`` of ``n_docs`` documents."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def score_documents(
    terms: Iterable[str],
    postings: Mapping[str, Mapping[str, int]],
    doc_lengths: Mapping[str, int],
    *,
    n_docs: int,
    params: Bm25Params = Bm25Params(),
) -> dict[str, float]:
    """BM25 score of every document holding at least one term.

    ``postings[term]`` must list *every* document of the namespace holding ``term`` (it is the df),
    not only the ones a filter admits -- filtering happens after scoring.
    """
    if n_docs <= 0:
        return {}
    scores: dict[str, float] = {}
    for term in sorted(set(terms)):
        docs = postings.get(term)
        if not docs:
            continue
        weight = idf(n_docs, len(docs))
        for doc_id in sorted(docs):
            tf = docs[doc_id]
            norm = params.k1 * (1.0 - params.b + params.b * doc_lengths[doc_id] / params.avgdl)
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
