"""Polling with a deadline, for tests that wait on other processes (never a fixed sleep as an assertion)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(what: str, check: Callable[[], Any], *, timeout: float = 60.0,
             explain: Callable[[], str] = lambda: "", every: float = 0.05) -> Any:
    """Call ``check`` until it returns something truthy and return that; past ``timeout`` seconds
    fail with ``what`` and ``explain()`` (the processes' logs)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s\n{explain()}")
        time.sleep(every)
