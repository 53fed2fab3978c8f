"""The app the cross-worker tracing test runs: ``LUNORA_APP=traced_app:build_app``.

Turn 0 calls ``pair`` twice in parallel; each call waits (a Redis barrier under ``TRACED_PREFIX``)
until both have started, so with two single-process workers the two calls provably run in two
different worker processes. Turn 1 answers.
"""

from __future__ import annotations

import os
import time
from typing import Any

import redis

from lunora_jobs.agent import define_agent
from lunora_jobs.models.base import Usage
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_calls_turn
from lunora_jobs.telemetry import otel_telemetry
from lunora_jobs.tools import ToolContext, define_tool

PROMPT = "PRIVATE-PROMPT do not trace me"


def _pair(args: dict[str, Any], ctx: ToolContext) -> str:
    r = redis.Redis.from_url(os.environ["TRACED_REDIS_URL"])
    key = f"{os.environ['TRACED_PREFIX']}:entered"
    r.sadd(key, ctx.idempotency_key)
    deadline = time.monotonic() + 30
    while r.scard(key) < 2:
        if time.monotonic() > deadline:
            raise TimeoutError("the other call of the pair never started")
        time.sleep(0.02)
    return f"paired {args['value']} in {os.getpid()}"


pair = define_tool(
    name="pair", description="Wait for the sibling call.", execute=_pair,
    input_schema={"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]},
)


def build_app(tracer_provider: Any = None) -> Any:
    """The app; ``tracer_provider``: where this process's spans go (the worker's global one by default)."""
    from lunora_jobs.runtime import Lunora

    agent = define_agent(
        name="traced", instructions="Pair up.",
        model=ScriptedModel([
            tool_calls_turn([("p1", "pair", {"value": "a"}), ("p2", "pair", {"value": "b"})],
                            usage=Usage(12, 4)),
            final_turn("paired", usage=Usage(30, 2)),
        ]),
        tools=[pair], telemetry=otel_telemetry(tracer_provider),
    )
    return Lunora.from_env(agents=[agent])
