"""The user app of the time-limit tests: ``LUNORA_APP=limits_app:build_app`` (this folder and the
fleet's on PYTHONPATH). Its only agent has ``step_timeout_s=LIMIT_S``, so the step tasks' soft time
limit is ``LIMIT_S`` and the hard one ``LIMIT_S + workers.time_limits.HARD_LIMIT_MARGIN_S``.

- ``hang``: counts itself in ``<prefix>:running`` (and the highest count in ``<prefix>:peak``),
  announces itself on ``<prefix>:entered`` with the time, then sleeps far past the limit;
- ``stubborn``: the same, but swallows the soft limit's exception and sleeps on (only the hard
  limit stops it).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from fleet_app import _key, _redis

from lunora_jobs.agent import define_agent
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn
from lunora_jobs.tools import ToolContext, define_tool

LIMIT_S = 2.0
HANG_S = 120.0


def _enter(ctx: ToolContext) -> None:
    r = _redis()
    running = r.incr(_key("running"))
    r.eval("if tonumber(ARGV[1]) > tonumber(redis.call('GET', KEYS[1]) or '0') then "
           "redis.call('SET', KEYS[1], ARGV[1]) end", 1, _key("peak"), running)
    r.rpush(_key("entered"), f"{ctx.idempotency_key}@{time.time():.3f}")


def _hang(args: dict[str, Any], ctx: ToolContext) -> str:
    _enter(ctx)
    try:
        time.sleep(HANG_S)
    finally:
        _redis().decr(_key("running"))
    return "woke up"


def _stubborn(args: dict[str, Any], ctx: ToolContext) -> str:
    _enter(ctx)
    try:
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline:
            # A tool that ignores the soft limit, on purpose: only the hard limit stops it.
            with contextlib.suppress(BaseException):
                time.sleep(HANG_S)
    finally:
        _redis().decr(_key("running"))
    return "woke up"


_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
hang = define_tool(name="hang", description="Hang.", input_schema=_SCHEMA, execute=_hang)
stubborn = define_tool(name="stubborn", description="Hang, deaf.", input_schema=_SCHEMA, execute=_stubborn)

limited = define_agent(
    name="limited",
    instructions="Call the tool, then answer.",
    model=ScriptedModel([tool_call_turn("h1", "hang", {}), final_turn("gave up waiting")]),
    tools=[hang, stubborn],
    step_timeout_s=LIMIT_S,
    max_attempts=2,
)
deaf = define_agent(
    name="deaf",
    instructions="Call the stubborn tool, then answer.",
    model=ScriptedModel([tool_call_turn("s1", "stubborn", {}), final_turn("gave up waiting")]),
    tools=[hang, stubborn],
    step_timeout_s=LIMIT_S,
    max_attempts=2,
)


def build_app() -> Any:
    """A fresh ``Lunora`` app on the current environment."""
    import os

    from lunora_jobs.runtime import Lunora

    return Lunora.from_env(agents=[limited, deaf], redis_prefix=os.environ["FLEET_PREFIX"])
