"""``RetryPolicy``: how often and how patiently an agent's failed steps are tried again.

``define_agent(retry=RetryPolicy(...))`` (or a dict of the same fields) sets, per agent:

- ``max_attempts``: attempts of one step before it fails for good (a turn fails the run, a tool's
  last error becomes its result for the model); also the poison-step rule's count;
- ``base_s`` / ``cap_s``: the exponential backoff with full jitter between attempts — a uniform draw
  in ``[0, min(cap_s, base_s * 2 ** (attempt - 1))]`` seconds (a server's ``Retry-After`` wins);
- which errors are retried: every error, except an HTTP 4xx whose status is not in
  ``retry_statuses`` (default 408, 409, 425, 429) and any instance of a ``give_up_on`` class (by
  class or subclass, e.g. ``give_up_on=(ValueError,)``).

Every value is checked here (``InvalidRetryPolicyError`` names the field and the fix). A run records
the policy it started with (``to_json`` in the run's stored input), and its steps use that recorded
policy, so a deploy that changes ``retry=`` applies to new runs only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from lunora_jobs.errors import InvalidRetryPolicyError

DEFAULT_RETRY_STATUSES = frozenset({408, 409, 425, 429})
"""The HTTP 4xx statuses retried by default: timeout, conflict, too early, rate limit."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When a failed step runs again. Example::

        define_agent(name="support", retry=RetryPolicy(max_attempts=8, base_s=0.5, cap_s=30,
                                                       give_up_on=(ValueError,)))
    """

    max_attempts: int = 5
    base_s: float = 1.0
    cap_s: float = 60.0
    retry_statuses: Iterable[int] = DEFAULT_RETRY_STATUSES
    """Any iterable of statuses is taken (kept as a frozenset)."""
    give_up_on: Iterable[type[BaseException] | str] = ()
    """Exception classes (kept as their qualified names, ``module.Class``) never retried."""

    def __post_init__(self) -> None:
        # Normalised before the checks: classes become names, so a recorded policy compares equal.
        object.__setattr__(self, "retry_statuses", _statuses(self.retry_statuses))
        object.__setattr__(self, "give_up_on", _class_names(self.give_up_on))
        _check(self)

    @classmethod
    def coerce(cls, value: Any, max_attempts: int | None = None) -> RetryPolicy:
        """A policy from ``define_agent``'s ``retry=`` (None, a ``RetryPolicy`` or a dict) and its
        ``max_attempts=`` (given both, they must agree)."""
        if value is None:
            return cls() if max_attempts is None else cls(max_attempts=max_attempts)
        if isinstance(value, RetryPolicy):
            policy = value
        elif isinstance(value, Mapping):
            known = {f.name for f in fields(cls)}
            unknown = sorted(str(k) for k in value if k not in known)
            if unknown:
                raise InvalidRetryPolicyError(
                    f"retry has unknown field(s) {unknown}; fields: {', '.join(sorted(known))}."
                )
            policy = cls(**value)
        else:
            raise InvalidRetryPolicyError(
                f"retry must be a RetryPolicy(...) or a dict of its fields, got {type(value).__name__}."
            )
        if max_attempts is not None and max_attempts != policy.max_attempts:
            raise InvalidRetryPolicyError(
                f"max_attempts={max_attempts!r} disagrees with retry's max_attempts={policy.max_attempts!r}; "
                "give it once, inside retry=."
            )
        return policy

    @property
    def base_ms(self) -> int:
        """``base_s`` in milliseconds."""
        return int(self.base_s * 1000)

    @property
    def cap_ms(self) -> int:
        """``cap_s`` in milliseconds."""
        return int(self.cap_s * 1000)

    def gives_up_on(self, exc: BaseException) -> bool:
        """Whether ``exc`` is an instance of a ``give_up_on`` class (matched by qualified name along
        its class's MRO, so a recorded policy works without importing anything)."""
        if not self.give_up_on:
            return False
        names = {_qualified(klass) for klass in type(exc).__mro__}
        return any(name in names for name in self.give_up_on)

    def to_json(self) -> dict[str, Any]:
        """The form a run records at its start."""
        return {"max_attempts": self.max_attempts, "base_s": self.base_s, "cap_s": self.cap_s,
                "retry_statuses": sorted(self.retry_statuses), "give_up_on": list(self.give_up_on)}

    @classmethod
    def from_json(cls, data: Any) -> RetryPolicy | None:
        """The policy a run recorded, or None when it recorded none (or something unreadable)."""
        if not isinstance(data, Mapping):
            return None
        try:
            return cls(int(data["max_attempts"]), float(data["base_s"]), float(data["cap_s"]),
                       frozenset(int(s) for s in data["retry_statuses"]),
                       tuple(str(n) for n in data["give_up_on"]))
        except (KeyError, TypeError, ValueError, InvalidRetryPolicyError):
            return None


def _check(policy: RetryPolicy) -> None:
    if isinstance(policy.max_attempts, bool) or not isinstance(policy.max_attempts, int) \
            or policy.max_attempts < 1:
        raise InvalidRetryPolicyError(f"retry max_attempts must be an int >= 1, got {policy.max_attempts!r}.")
    for name in ("base_s", "cap_s"):
        value = getattr(policy, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise InvalidRetryPolicyError(f"retry {name} must be a number of seconds >= 0, got {value!r}.")
    if policy.cap_s < policy.base_s:
        raise InvalidRetryPolicyError(
            f"retry cap_s={policy.cap_s!r} is below base_s={policy.base_s!r}; the cap bounds every wait, "
            "so make it at least base_s."
        )
    if not all(
        isinstance(s, int) and not isinstance(s, bool) and 400 <= s <= 499 for s in policy.retry_statuses
    ):
        raise InvalidRetryPolicyError(
            f"retry retry_statuses must be HTTP 4xx statuses (ints 400-499; 5xx are always retried), "
            f"got {policy.retry_statuses!r}."
        )


def _statuses(value: Any) -> frozenset[int]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidRetryPolicyError(
            f"retry retry_statuses must be a list of HTTP 4xx statuses, got {value!r}."
        )
    return frozenset(value)


def _class_names(value: Any) -> tuple[str, ...]:
    """Exception classes (or the names a recorded policy holds) as qualified names."""
    if isinstance(value, type):
        value = (value,)
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidRetryPolicyError(f"retry give_up_on must be exception classes, got {value!r}.")
    names: list[str] = []
    for klass in value:
        if isinstance(klass, str) and "." in klass:  # a recorded name: module.Class
            names.append(klass)
        elif isinstance(klass, type) and issubclass(klass, BaseException):
            names.append(_qualified(klass))
        else:
            raise InvalidRetryPolicyError(
                f"retry give_up_on entry {klass!r} is not an exception class; pass classes like ValueError."
            )
    return tuple(dict.fromkeys(names))


def _qualified(klass: type) -> str:
    return f"{klass.__module__}.{klass.__qualname__}"
