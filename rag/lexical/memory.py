"""``bm25_lexical_store()``: an in-memory inverted index. Not durable, not shared between processes --
for tests, local development and single-process workloads. ``sql_lexical_store`` is the durable twin."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.filters import matches_metadata_filter
from rag.lexical.base import LexicalRecord
from rag.lexical.kernel import Bm25Params, query_terms, ranked, score_documents, take, term_frequencies
from rag.namespaces import store_key
from rag.stores.base import VectorHit


@dataclass
class _Namespace:
    docs: dict[str, tuple[LexicalRecord, int, Counter[str]]] = field(default_factory=dict)
    postings: dict[str, dict[str, int]] = field(default_factory=dict)
    total_length: int = 0


class Bm25LexicalStore:
    """Okapi BM25 over an in-memory inverted index, one per namespace."""

    def __init__(self, params: Bm25Params = Bm25Params()) -> None:
        self.params = params
        self._spaces: dict[str, _Namespace] = {}
        self._lock = threading.Lock()

    def upsert(self, records: Sequence[LexicalRecord], *, namespace: str | None = None) -> None:
        """Insert or replace records by id."""
        with self._lock:
            space = self._spaces.setdefault(store_key(namespace), _Namespace())
            for record in records:
                self._remove(space, record.id)
                tf, length = term_frequencies(record.text)
                space.docs[record.id] = (record, length, tf)
                space.total_length += length
                for term, count in tf.items():
                    space.postings.setdefault(term, {})[record.id] = count

    def delete_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> None:
        """Delete records by id; missing ids are ignored."""
        with self._lock:
            space = self._spaces.get(store_key(namespace))
            if space is not None:
                for doc_id in ids:
                    self._remove(space, doc_id)

    def get_by_ids(self, ids: Sequence[str], *, namespace: str | None = None) -> list[VectorHit]:
        """Records by id (score 0), in the order given, skipping missing ones."""
        with self._lock:
            space = self._spaces.get(store_key(namespace))
            found = [space.docs[i][0] for i in ids if i in space.docs] if space is not None else []
            return [VectorHit(r.id, 0.0, r.text, dict(r.metadata)) for r in found]

    def search(
        self, query: str, *, top_k: int, namespace: str | None = None, filter: dict[str, Any] | None = None
    ) -> list[VectorHit]:
        """The ``top_k`` best BM25 matches in ``namespace`` admitted by ``filter``."""
        with self._lock:
            space = self._spaces.get(store_key(namespace))
            if space is None or top_k <= 0:
                return []
            terms = query_terms(query)
            postings = {t: dict(space.postings[t]) for t in terms if t in space.postings}
            lengths = {d: space.docs[d][1] for docs in postings.values() for d in docs}
            scores = score_documents(
                terms,
                postings,
                lengths,
                n_docs=len(space.docs),
                params=self.params,
            )
            docs = space.docs

            def admit(doc_id: str) -> bool:
                return matches_metadata_filter(docs[doc_id][0].metadata, filter)

            hits = take(ranked(scores), top_k, admit)
            return [VectorHit(d, s, docs[d][0].text, dict(docs[d][0].metadata)) for d, s in hits]

    @staticmethod
    def _remove(space: _Namespace, doc_id: str) -> None:
        old = space.docs.pop(doc_id, None)
        if old is None:
            return
        space.total_length -= old[1]
        for term in old[2]:
            holders = space.postings.get(term)
            if holders is not None:
                holders.pop(doc_id, None)
                if not holders:
                    del space.postings[term]


def bm25_lexical_store(params: Bm25Params = Bm25Params()) -> Bm25LexicalStore:
    """An in-memory BM25 keyword index (see ``Bm25LexicalStore``)."""
    return Bm25LexicalStore(params)
