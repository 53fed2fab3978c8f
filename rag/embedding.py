"""Embedding calls of one bound rag: batching, fallback, dedupe, the query cache, the width check, spans.

- A document is embedded in one ``embed_many`` call over its *distinct* chunk texts; if the provider
  rejects the batch, each text is embedded alone instead of failing the index.
- Query embeddings may be kept in a small LRU (``cache_embeddings`` entries) scoped to the bound rag.
- The first embedding is measured against the store's ``max_dimensions`` (or an explicit
  ``max_embedding_dimensions``, which wins; ``False`` disables the check), once per bound rag.
- With a tracer, each call is an ``embeddings`` span carrying the model and, when the embedder reports
  ``last_usage``, a cost attribute that says whether it is the provider's figure or an estimate.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal

from rag.cost import set_cost_attributes
from rag.embeddings.base import Embedder
from rag.errors import EmbeddingDimensionError

log = logging.getLogger(__name__)


class EmbeddingCalls:
    """The embedding side of one bound rag (see the module docstring)."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        max_dimensions: int | None,
        cache_size: int = 0,
        tracer: Any = None,
    ) -> None:
        self.embedder = embedder
        self.max_dimensions = max_dimensions
        self.cache_size = max(0, cache_size)
        self.tracer = tracer
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._checked = False
        self._lock = threading.Lock()

    def embed_document(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for ``texts`` in order; identical texts are embedded once."""
        distinct = list(dict.fromkeys(texts))
        if not distinct:
            return []
        try:
            vectors = self._call(distinct, "document")
            if len(vectors) != len(distinct):
                raise ValueError(f"embedder returned {len(vectors)} vectors for {len(distinct)} texts")
        except EmbeddingDimensionError:
            raise
        except Exception as exc:  # a provider rejecting the batch (size, rate, one bad input)
            log.warning("batch embedding of %d chunks failed (%s); embedding one by one", len(distinct), exc)
            vectors = [self._call([text], "chunk")[0] for text in distinct]
        by_text = dict(zip(distinct, vectors, strict=True))
        return [by_text[text] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """The query's vector, from the bounded cache when present."""
        if self.cache_size:
            with self._lock:
                if text in self._cache:
                    self._cache.move_to_end(text)
                    return self._cache[text]
        vector = self._call([text], "query")[0]
        if self.cache_size:
            with self._lock:
                self._cache[text] = vector
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return vector

    @property
    def cached(self) -> int:
        """How many query embeddings the cache holds now."""
        return len(self._cache)

    def _call(self, texts: list[str], kind: Literal["document", "chunk", "query"]) -> list[list[float]]:
        with self._span(len(texts), kind) as span:
            vectors = [list(map(float, v)) for v in self.embedder.embed_many(texts)]
            usage = getattr(self.embedder, "last_usage", None)
            if span is not None and usage is not None:
                set_cost_attributes(span, self.embedder.model, usage)
        if vectors and not self._checked:
            self._check(len(vectors[0]))
        return vectors

    def _check(self, width: int) -> None:
        limit = self.max_dimensions
        if limit is not None and width > limit:
            raise EmbeddingDimensionError(
                f"embedding model {self.embedder.model!r} produces {width}-dimension vectors, but this "
                f"store accepts at most {limit}. Either request fewer dimensions from the model "
                f"(Matryoshka truncation, e.g. OpenAI dimensions={limit}), use a store without this "
                "ceiling, or pass max_embedding_dimensions=<n> / False to define_rag if the limit is wrong."
            )
        self._checked = True

    def _span(self, count: int, kind: str) -> AbstractContextManager[Any]:
        if self.tracer is None:
            return nullcontext(None)
        span: AbstractContextManager[Any] = self.tracer.start_as_current_span(
            "embeddings",
            attributes={
                "gen_ai.operation.name": "embeddings",
                "gen_ai.request.model": self.embedder.model,
                "lunora.rag.embed.kind": kind,
                "lunora.rag.embed.inputs": count,
            },
        )
        return span
