"""Shared agents, tools and clocks for the harness tests."""

from __future__ import annotations

from typing import Any

from lunora_jobs import ToolContext, define_agent, tool
from lunora_jobs.agent import AgentDefinition
from lunora_jobs.testing import FakeClock as FakeClock


class WorkerDied(BaseException):
    """Raised inside a step to simulate the worker process dying mid-step (not an Exception: the
    engine must not get to record anything, exactly as with a SIGKILL)."""


@tool
def get_weather(city: str, ctx: ToolContext) -> Any:
    """Look up the current weather for a city."""
    return ctx.run("weather:lookup", {"city": city}, idempotency_key=ctx.idempotency_key)


@tool
def finalize(answer: str) -> str:
    """Record the final answer."""
    return f"recorded: {answer}"


def weather_agent(**options: Any) -> AgentDefinition:
    """The seed's weather agent (tools: get_weather, finalize), with any loop options."""
    options.setdefault("tools", [get_weather, finalize])
    options.setdefault("instructions", "You are a helpful support agent.")
    return define_agent(name="support", model="offline", **options)


def weather_stub(args: dict[str, Any]) -> dict[str, Any]:
    """A deterministic ``weather:lookup``."""
    return {"city": args["city"], "temp_c": 21, "sky": "sunny"}
