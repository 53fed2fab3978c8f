"""Named exceptions a user can hit. Each message says what to do about it."""

from __future__ import annotations


class LunoraError(Exception):
    """Base class of every error Lunora Jobs raises on purpose."""


class ConfigurationError(LunoraError, ValueError):
    """A declaration or setting is invalid (raised at declaration time, not at run time)."""


class ConflictError(LunoraError):
    """A thread already has a run in flight, or a decision contradicts an earlier one."""


class NotFoundError(LunoraError, LookupError):
    """No such thread / run / step — or one the caller may not see (the two are indistinguishable)."""


class StepExhaustedError(LunoraError):
    """A step was attempted ``max_attempts`` times without finishing; the run is failed with it."""


class LeaseLostError(LunoraError):
    """A step's lease was taken over (its fencing generation moved on); the result was not applied."""


class IdentityTooLongError(LunoraError, ValueError):
    """An identity field (owner, actor, tenant, key) exceeds 255 characters."""


# --- agent declaration, tools and models -------------------------------------------------------


class InvalidAgentOptionError(ConfigurationError):
    """An option passed to ``define_agent`` is invalid; the message names the option and the fix."""


class DuplicateToolError(ConfigurationError):
    """Two tools (the agent's own, or from skills) share one name; rename one of them."""


class InvalidToolError(ConfigurationError):
    """A tool declaration is invalid (bad name, schema, or a non-callable execute)."""


class UnknownModelProviderError(ConfigurationError, LookupError):
    """A ``"provider:model"`` string names a provider nobody registered."""


class ToolInputError(LunoraError, ValueError):
    """A tool call's input does not match the tool's input schema.

    The message is written for the model: the next turn sees it as the tool's result and can retry.
    """


class OutputParseError(LunoraError, ValueError):
    """The model's final answer is not valid JSON for the agent's ``output`` schema."""


class ScriptExhaustedError(LunoraError, RuntimeError):
    """A ``ScriptedModel`` was asked for more turns than its script holds; add turns to the script."""


# --- retrieval (rag/) --------------------------------------------------------------------------


class RagError(LunoraError):
    """Base class of the retrieval library's named errors."""


class EmbeddingDimensionError(RagError, ValueError):
    """An embedding is wider than the vector store accepts; the message names the limit and the escapes."""


class MetadataTooLargeError(RagError, ValueError):
    """A chunk's metadata (with its text) exceeds the store's per-vector budget; shrink the chunk size."""


class TopKTooLargeError(RagError, ValueError):
    """``top_k`` exceeds what the vector store can return in one query."""


class NamespaceRequiredError(RagError, ValueError):
    """A multi-tenant index (``require_namespace=True``) was called without a namespace."""


class NamespaceTooLargeError(RagError):
    """A brute-force store was asked to scan more vectors than its ``max_scan``; use an ANN store."""


class RerankerError(RagError, ValueError):
    """A reranker returned something unusable (e.g. a score list of the wrong length)."""


# --- retrieval embedders (rag/embeddings) ------------------------------------------------------


class EmbedderUnavailableError(RagError, ImportError):
    """An embedder's optional extra (package or model files) is not installed; the message says which."""


class EmbeddingInputError(RagError, ValueError):
    """A text cannot be embedded as given (e.g. empty input an OpenAI-compatible endpoint rejects)."""


class EmbeddingResponseError(RagError, RuntimeError):
    """An embedding endpoint answered with the wrong number of vectors or inconsistent dimensions."""



class VectorStoreLockedError(RagError, RuntimeError):
    """An embedded vector store's directory is open in another process (one writer per directory)."""
