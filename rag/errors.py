"""Named exceptions of the retrieval library. Each message says what to pass or do instead.

``rag`` is usable without agents and imports nothing from ``lunora_jobs``, so its errors live here.
Every one derives from ``RagError``; most also from the builtin a caller would expect (``ValueError``
for a bad value, ``PermissionError`` for an access refusal), so ``except ValueError`` keeps working.

Example::

    from rag.errors import AccessDeniedError, RagInputError
    try:
        docs.bind(auth=None).retrieve("refund policy")
    except AccessDeniedError as exc:       # IdentityRequiredError: no verified identity
        ...
"""

from __future__ import annotations


class RagError(Exception):
    """Base class of every error ``rag`` raises on purpose."""


class RagConfigurationError(RagError, ValueError):
    """A declaration or option is invalid (``define_rag``, a chunker, a reranker...)."""


class HybridUnavailableError(RagConfigurationError):
    """Hybrid (or lexical-only) retrieval was asked for, but the rag has no lexical leg.

    Give ``define_rag`` a ``lexical_store=`` or a store with a built-in lexical index (every bundled
    store has one), or ask for ``mode="dense"``.
    """


class RagInputError(RagError, ValueError):
    """A call got an argument of the wrong type or value (``None`` text, a bytes body, a str filter...)."""


class ReservedNamespaceError(RagInputError):
    """A namespace name is reserved (``__default__``, anything starting with ``__``) or empty."""


class NamespaceRequiredError(RagError, ValueError):
    """A multi-tenant index (``require_namespace=True``) was called without a namespace."""


class AccessDeniedError(RagError, PermissionError):
    """Row-level security refused the call. Subclasses say why."""


class IdentityRequiredError(AccessDeniedError):
    """An index with ``rls_filter`` was read without a verified identity (unbound, or ``auth`` empty)."""


class EmptyRlsScopeError(AccessDeniedError):
    """``rls_filter(auth)`` returned ``None`` or ``{}``: the identity is admitted to no rows."""


class ForeignRowError(AccessDeniedError):
    """A bound identity tried to create, replace or delete rows its ``rls_filter`` does not admit."""


class EmbeddingDimensionError(RagError, ValueError):
    """An embedding is wider than the vector store accepts; the message names the limit and the escapes."""


class DimensionMismatchError(RagError, ValueError):
    """A vector's width differs from the vectors already in the namespace (or collection).

    Vectors of two embedding models are not comparable: index the new model into a new index or
    namespace (``embedding_model_version=``), or re-index everything with one model.
    """


class EmbedderMismatchError(RagError, ValueError):
    """The index was written with another embedding model than the one querying it."""


class MetadataTooLargeError(RagError, ValueError):
    """A chunk's metadata (with its text) exceeds the store's per-vector budget; shrink the chunk size."""


class TopKTooLargeError(RagInputError):
    """``top_k`` (or ``candidates``) exceeds what the vector store can return in one query."""


class NamespaceTooLargeError(RagError):
    """A brute-force store was asked to scan more vectors than its ``max_scan``; use an ANN store."""


class RerankerError(RagError, ValueError):
    """A reranker returned something unusable (e.g. a score list of the wrong length)."""


class EmbedderUnavailableError(RagError, ImportError):
    """An embedder's optional extra (package or model files) is not installed; the message says which."""


class EmbeddingInputError(RagInputError):
    """A text cannot be embedded as given (not a str, or empty where an OpenAI-compatible endpoint
    rejects empty input)."""


class EmbeddingResponseError(RagError, RuntimeError):
    """An embedding endpoint answered with the wrong number of vectors or inconsistent dimensions."""


class VectorStoreLockedError(RagError, RuntimeError):
    """An embedded vector store's directory is open in another process (one writer per directory)."""


__all__ = [
    "AccessDeniedError",
    "DimensionMismatchError",
    "EmbedderMismatchError",
    "EmbedderUnavailableError",
    "EmbeddingDimensionError",
    "EmbeddingInputError",
    "EmbeddingResponseError",
    "EmptyRlsScopeError",
    "ForeignRowError",
    "HybridUnavailableError",
    "IdentityRequiredError",
    "MetadataTooLargeError",
    "NamespaceRequiredError",
    "NamespaceTooLargeError",
    "RagConfigurationError",
    "RagError",
    "RagInputError",
    "RerankerError",
    "ReservedNamespaceError",
    "TopKTooLargeError",
    "VectorStoreLockedError",
]
