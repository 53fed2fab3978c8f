"""``HashingEmbedder``: deterministic feature hashing. NOT a semantic embedding -- for unit tests.

Each word token (and, optionally, each character trigram) is hashed with BLAKE2b into one of
``dimensions`` buckets with a sign, and the vector is L2-normalised. Texts sharing words land near each
other; synonyms do not. Same text, same vector, in every process (no ``hash()`` randomisation).

Example::

    embedder = HashingEmbedder(dimensions=64)
    embedder.embed_many(["reset password", "password reset"])   # two identical vectors
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from rag.embeddings.base import checked_texts
from rag.lexical.kernel import tokenize


class HashingEmbedder:
    """A bag-of-words hashing vectoriser with the ``Embedder`` interface (not semantic)."""

    def __init__(self, dimensions: int = 256, *, char_ngrams: int = 0) -> None:
        self.dimensions = dimensions
        self.char_ngrams = char_ngrams
        self.model = f"hashing-{dimensions}"

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        return [self.embed(text) for text in checked_texts(texts)]

    def embed(self, text: str) -> list[float]:
        """The vector of one text."""
        vector = [0.0] * self.dimensions
        for feature in self._features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dimensions
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm > 0 else vector

    def _features(self, text: str) -> list[str]:
        tokens = tokenize(text)
        features = [f"w:{t}" for t in tokens]
        if self.char_ngrams > 0:
            n = self.char_ngrams
            for token in tokens:
                padded = f"^{token}$"
                features.extend(f"c:{padded[i : i + n]}" for i in range(max(1, len(padded) - n + 1)))
        return features
