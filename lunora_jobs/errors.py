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
