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


# Retrieval errors live in ``rag.errors`` (``rag`` does not import this package).


# --- production settings ----------------------------------------------------------------------


class MissingModelKeyError(ConfigurationError):
    """Outside the embedded default, an agent's model needs a key that is not set: the worker would
    otherwise run the offline model (``model="auto"``) or fail at the first turn (``openai:...``)."""


class MissingDatabaseUrlError(ConfigurationError):
    """A broker is configured but ``LUNORA_DATABASE_URL`` is not: every worker would keep its own
    SQLite file, and no two processes would see the same runs."""
