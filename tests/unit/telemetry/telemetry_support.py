"""Shared by the telemetry tests: a tool that fails its first call."""

from __future__ import annotations

from lunora_jobs import tool
from lunora_jobs.tools import ToolDefinition


def flaky_tool() -> ToolDefinition:
    """A fresh ``flaky(x)`` tool: its first call raises ``RuntimeError("backend down")``, later ones
    return ``"ok"``."""
    calls: list[int] = []

    @tool
    def flaky(x: int) -> str:
        """Fails once."""
        calls.append(x)
        if len(calls) == 1:
            raise RuntimeError("backend down")
        return "ok"

    return flaky
