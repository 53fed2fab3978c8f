"""The user app of the chaos tests: ``LUNORA_APP=chaos_app:build_app`` (a factory; this folder and the
fleet's on PYTHONPATH).

It extends ``fleet_app`` (the same durable Redis counters under ``FLEET_PREFIX``), with one
difference: ``ctx.idempotency_key`` is the step name, unique within a run only (the seed's contract),
so a tool deduping in a store shared by many runs keys its effects on ``<run_id>:<idempotency_key>``
— and so do these tools (``chaos_support.executions`` / ``applied`` read them back per run).

- ``note``: applies its effect once;
- ``gate``: applies its effect, announces itself on ``<prefix>:entered``, then waits until the test
  opens ``<prefix>:open:<idempotency_key>`` (one gate per step, unlike ``block``'s single flag) and
  announces on ``<prefix>:left`` that it is returning, so a test can time an outage against it;
- ``slow``: applies its effect, then works for ``CHAOS_SLOW_S`` seconds, so random kills land mid-step;
- ``recover``: the default ``step_timeout_s`` (300 s), for the recovery-time bound after a kill;
- ``scale``: the chaos-at-scale run (``test_chaos_scale``): three parallel ``slow`` calls, then a
  ``pay`` call that waits for a human approval beside two more ``slow`` calls, then the answer;
- ``CountingModel``: the scripted model, counting every call per ``<run input>:<turn>`` in
  ``<prefix>:llm`` (a paid model call must not be repeated for a finished turn).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from fleet_app import LEASE_MARGIN_S, STEP_TIMEOUT_S, _key, _redis, apply_effect_once

from lunora_jobs.agent import define_agent
from lunora_jobs.models.base import ModelTurn, ToolChoice, ToolSpec
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_calls_turn
from lunora_jobs.tools import ToolContext, define_tool

SLOW_S = float(os.environ.get("CHAOS_SLOW_S", "0.4"))
MODEL_S = float(os.environ.get("CHAOS_MODEL_S", "0.05"))
# Random kills may hit one step several times; the poison-step limit is tested elsewhere.
MAX_ATTEMPTS = 12


class CountingModel:
    """``ScriptedModel`` that counts its calls durably and takes ``delay`` seconds per turn."""

    def __init__(self, turns: Sequence[ModelTurn], delay: float = 0.0) -> None:
        self.inner = ScriptedModel(turns, name="counting")
        self.name = self.inner.name
        self.delay = delay

    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        """Count the call under ``<first user message>:<turn index>``, then play the scripted turn."""
        user = next(str(m.get("content")) for m in messages if m.get("role") == "user")
        index = sum(1 for m in messages if m.get("role") == "assistant")
        _redis().hincrby(_key("llm"), f"{user}:{index}", 1)
        if self.delay:
            time.sleep(self.delay)
        return self.inner.generate(
            messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema
        )


def _apply_effect(ctx: ToolContext, value: str) -> None:
    # fleet_app's counting, on a run-scoped key: HSETNX is the dedupe, ``applied`` counts real effects.
    apply_effect_once(f"{ctx.run_id}:{ctx.idempotency_key}", value)


def _note(args: dict[str, Any], ctx: ToolContext) -> str:
    _apply_effect(ctx, args["value"])
    return f"noted {args['value']}"


def _gate(args: dict[str, Any], ctx: ToolContext) -> str:
    _apply_effect(ctx, args["value"])
    r = _redis()
    r.hset(_key("pids"), ctx.idempotency_key, os.getpid())
    r.rpush(_key("entered"), ctx.idempotency_key)
    deadline = time.monotonic() + 60
    while not r.exists(_key(f"open:{ctx.idempotency_key}")):
        if time.monotonic() > deadline:
            raise TimeoutError("chaos test never opened the gate")
        time.sleep(0.02)
    r.rpush(_key("left"), ctx.idempotency_key)
    return f"passed {args['value']}"


def _slow(args: dict[str, Any], ctx: ToolContext) -> str:
    _apply_effect(ctx, args["value"])
    time.sleep(SLOW_S)
    return f"slow {args['value']}"


def _pay(args: dict[str, Any], ctx: ToolContext) -> str:
    _apply_effect(ctx, args["value"])
    return f"paid {args['value']}"


_SCHEMA = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
note = define_tool(name="note", description="Record a value once.", input_schema=_SCHEMA, execute=_note)
gate = define_tool(name="gate", description="Record a value, then wait for the test.", input_schema=_SCHEMA,
                   execute=_gate)
slow = define_tool(name="slow", description="Record a value, then work a while.", input_schema=_SCHEMA,
                   execute=_slow)
pay = define_tool(name="pay", description="Pay once a human approved.", input_schema=_SCHEMA, execute=_pay,
                  needs_approval=True)

dbchaos = define_agent(
    name="dbchaos",
    instructions="Record and wait while the database comes and goes.",
    model=CountingModel([
        tool_calls_turn([("g1", "gate", {"value": "g1"}), ("a1", "note", {"value": "a1"}),
                         ("a2", "note", {"value": "a2"})]),
        tool_calls_turn([("g2", "gate", {"value": "g2"}), ("a3", "note", {"value": "a3"}),
                         ("a4", "note", {"value": "a4"})]),
        tool_calls_turn([("a5", "note", {"value": "a5"})]),
        final_turn("durable"),
    ]),
    tools=[note, gate],
    step_timeout_s=STEP_TIMEOUT_S,
    max_attempts=MAX_ATTEMPTS,
)

SOAK_TURNS = 4
SOAK_CALLS = 3
soak = define_agent(
    name="soak",
    instructions="Fan out slow tool calls while workers die around you.",
    model=CountingModel([
        *(tool_calls_turn([(f"s{t}{c}", "slow", {"value": f"{t}.{c}"}) for c in range(SOAK_CALLS)])
          for t in range(SOAK_TURNS)),
        final_turn("soaked"),
    ], delay=MODEL_S),
    tools=[slow],
    step_timeout_s=STEP_TIMEOUT_S,
    max_attempts=MAX_ATTEMPTS,
)

recover = define_agent(
    name="recover",
    instructions="Pass the gate, then answer; workers die at the gate.",
    model=CountingModel([
        tool_calls_turn([("g1", "gate", {"value": "g1"}), ("a1", "note", {"value": "a1"})]),
        final_turn("recovered"),
    ]),
    tools=[note, gate],
    # The default step_timeout_s (300 s): recovery after a kill must not wait for it.
    max_attempts=MAX_ATTEMPTS,
)

SCALE_FIRST = [f"c{c}" for c in range(3)]
SCALE_SECOND = ["p1", "c3", "c4"]
scale = define_agent(
    name="scale",
    instructions="Fan out, ask for an approval while fanning out again, then answer.",
    model=CountingModel([
        tool_calls_turn([(c, "slow", {"value": c}) for c in SCALE_FIRST]),
        tool_calls_turn([("p1", "pay", {"value": "p1"}),
                         *((c, "slow", {"value": c}) for c in SCALE_SECOND[1:])]),
        final_turn("scaled"),
    ], delay=MODEL_S),
    tools=[slow, pay],
    # The default step_timeout_s: a killed step must be taken over by its lease, not its time limit.
    max_attempts=MAX_ATTEMPTS,
)

AGENTS = [dbchaos, soak, recover, scale]


def build_app() -> Any:
    """A fresh ``Lunora`` app on the current environment."""
    from lunora_jobs.runtime import Lunora

    app = Lunora.from_env(agents=AGENTS)
    app.deps.lease_margin_s = LEASE_MARGIN_S
    return app
