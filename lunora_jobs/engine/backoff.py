"""When a failed attempt runs again: exponential backoff with full jitter, or the server's Retry-After.

A step's failed attempt is not re-dispatched at once any more: a burst of HTTP 429 from a model API
would spend every attempt in a second and fail the run. ``retry_delay_ms`` picks the wait:

- the error says how long (``Retry-After`` / ``retry-after-ms`` on the HTTP response an SDK error
  carries, or a ``retry_after`` attribute in seconds): that, up to ``MAX_RETRY_AFTER_MS``;
- otherwise full jitter (AWS's "exponential backoff and jitter"): a uniform draw in
  ``[0, min(cap, base * 2 ** (attempt - 1))]``, so a burst of failures spreads out instead of
  retrying in lockstep.

``terminal`` says which errors no retry can fix: an HTTP 4xx other than 408 (timeout), 409
(conflict), 425 (too early) and 429 (rate limit) — a bad request, a missing key, an unknown model.

An agent's ``retry=`` (``lunora_jobs.retry_policy.RetryPolicy``) sets the attempts, the base and cap
of the jitter, the retried 4xx statuses and the classes given up on at once; ``next_delay_ms`` asks
the policy a run recorded at its start.

The wait is durable: the failed attempt's ledger row keeps its lease until the due time
(``fail_step(retry_at=...)``), so no other claim runs it early, and the sweep dispatches it once due
if the delayed message is lost. The errors are read by duck typing (``status_code``, ``response``,
``headers``), so the engine imports no provider SDK.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from lunora_jobs.retry_policy import RetryPolicy

BASE_MS = 1_000
"""The first retry waits up to this long."""
CAP_MS = 60_000
"""No exponential wait is longer than this."""
MAX_RETRY_AFTER_MS = 600_000
"""A server's Retry-After is honoured up to ten minutes."""
RETRYABLE_4XX = frozenset({408, 409, 425, 429})


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries (``status_code``, or its ``response.status_code``)."""
    for holder in (exc, getattr(exc, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def terminal(exc: BaseException, retryable: Collection[int] = RETRYABLE_4XX) -> bool:
    """Whether no retry can fix ``exc``: an HTTP 4xx other than ``retryable`` (408, 409, 425, 429)."""
    status = http_status(exc)
    return status is not None and 400 <= status < 500 and status not in retryable


def next_delay_ms(
    policy: RetryPolicy, exc: BaseException, attempt: int,
    rng: Callable[[float, float], float] = random.uniform,
) -> int | None:
    """Under ``policy``: ms before attempt ``attempt + 1`` after ``exc`` ended attempt ``attempt``,
    or None when there is none (no attempt left, a terminal 4xx, a ``give_up_on`` class)."""
    if attempt >= policy.max_attempts or terminal(exc, frozenset(policy.retry_statuses)) \
            or policy.gives_up_on(exc):
        return None
    return retry_delay_ms(exc, attempt, base_ms=policy.base_ms, cap_ms=policy.cap_ms, rng=rng)


def retry_after_ms(exc: BaseException, now_s: Callable[[], float] = time.time) -> int | None:
    """The wait ``exc`` asks for: ``retry-after-ms``, ``Retry-After`` (seconds or an HTTP date) on
    its response, or its ``retry_after`` attribute (seconds); None when it names none."""
    own = getattr(exc, "retry_after", None)
    if isinstance(own, int | float) and not isinstance(own, bool):
        return max(int(own * 1000), 0)
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not isinstance(headers, Mapping) and not hasattr(headers, "get"):
        return None
    assert headers is not None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(int(float(raw_ms)), 0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(int(float(raw) * 1000), 0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(str(raw))
    except (TypeError, ValueError):
        return None
    return max(int((when.timestamp() - now_s()) * 1000), 0)


def retry_delay_ms(
    exc: BaseException, attempt: int, *, base_ms: int = BASE_MS, cap_ms: int = CAP_MS,
    rng: Callable[[float, float], float] = random.uniform,
) -> int:
    """How long to wait before attempt ``attempt + 1`` after ``exc`` ended attempt ``attempt``."""
    asked = retry_after_ms(exc)
    if asked is not None:
        return min(asked, MAX_RETRY_AFTER_MS)
    ceiling = min(cap_ms, base_ms * 2 ** max(attempt - 1, 0))
    return int(rng(0, ceiling))


def describe(delay_ms: int, exc: Any) -> str:
    """``retry in 1.2 s`` (with the server's ask named) for the log line of a failed attempt."""
    asked = " (Retry-After)" if retry_after_ms(exc) is not None else ""
    return f"retry in {delay_ms / 1000:.1f} s{asked}"
