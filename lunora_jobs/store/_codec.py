"""Helpers both stores share: the clock, ids, JSON columns, identity limits and patch keys.

Patch keys (``patch_thread``, ``update_run`` and ``StepCompletion.run_patch``/``thread_patch``):

- threads set: ``status``, ``title``, ``state``, ``model``, ``agent``, ``active_run_id``;
  increment: ``add_input_tokens``, ``add_output_tokens``.
- runs set: ``status``, ``result``, ``error``, ``stopped``, ``turns``, ``input_tokens``,
  ``output_tokens``; increment: ``add_turns``, ``add_input_tokens``, ``add_output_tokens``.

Nothing is added implicitly: a ``StepCompletion.usage`` entry goes to the usage ledger only, and
a caller that wants the run's/thread's totals to move passes the ``add_*`` keys. Unknown keys
raise ``ValueError`` so a typo never silently drops a write.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from lunora_jobs import jsonio
from lunora_jobs.errors import IdentityTooLongError
from lunora_jobs.store.base import MAX_IDENTITY

Clock = Callable[[], int]

THREAD_SET = frozenset({"status", "title", "state", "model", "agent", "active_run_id"})
THREAD_ADD = {"add_input_tokens": "input_tokens", "add_output_tokens": "output_tokens"}
RUN_SET = frozenset({"status", "result", "error", "stopped", "turns", "input_tokens", "output_tokens"})
RUN_ADD = {"add_turns": "turns", "add_input_tokens": "input_tokens", "add_output_tokens": "output_tokens"}
THREAD_JSON = frozenset({"state"})
RUN_JSON = frozenset({"result"})

DAY_MS = 86_400_000


def wall_clock() -> int:
    """Epoch milliseconds now."""
    return time.time_ns() // 1_000_000


def new_id() -> str:
    """A fresh 32-character id."""
    return uuid.uuid4().hex


def check_identity(field: str, value: str | None) -> str | None:
    """Refuse identity values longer than 255 characters instead of truncating them."""
    if value is not None and len(value) > MAX_IDENTITY:
        raise IdentityTooLongError(
            f"{field} is {len(value)} characters; identity fields are limited to {MAX_IDENTITY}. "
            f"Use a shorter {field} (for example a stable hash of the long value)."
        )
    return value


def dump(value: Any) -> str | None:
    """Encode a JSON column (None stays SQL NULL)."""
    return None if value is None else jsonio.dumps(value)


def load(text: str | None) -> Any:
    """Decode a JSON column."""
    return None if text is None else jsonio.loads(text)


def split_patch(
    patch: Mapping[str, Any], settable: frozenset[str], additive: Mapping[str, str], what: str
) -> tuple[dict[str, Any], dict[str, int]]:
    """Split a patch into plain sets and ``column -> increment``; unknown keys raise ``ValueError``."""
    sets: dict[str, Any] = {}
    adds: dict[str, int] = {}
    for key, value in patch.items():
        if key in settable:
            sets[key] = value
        elif key in additive:
            adds[additive[key]] = adds.get(additive[key], 0) + int(value)
        else:
            allowed = sorted(settable | set(additive))
            raise ValueError(f"cannot patch {what} field {key!r}; allowed: {', '.join(allowed)}")
    return sets, adds


def utc_day(now_ms: int) -> tuple[int, int]:
    """``[start, end)`` of the UTC day containing ``now_ms``."""
    start = now_ms - now_ms % DAY_MS
    return start, start + DAY_MS
