"""Every Redis key the engine uses, in one place.

All keys live under a prefix (default ``lunora``) so several apps — or several test suites — can
share one Redis without touching each other's keys.

Example::

    >>> run_lock_key("lunora", "run-1")
    'lunora:lock:run:run-1'
"""

from __future__ import annotations

DEFAULT_PREFIX = "lunora"


def run_lock_key(prefix: str, run_id: str) -> str:
    """The run lock: held while a worker reads the ledger and claims a step of ``run_id``."""
    return f"{prefix}:lock:run:{run_id}"


def thread_events_channel(prefix: str, thread_key: str) -> str:
    """Pub/sub channel of a thread's live updates (messages, status, state)."""
    return f"{prefix}:events:thread:{thread_key}"
