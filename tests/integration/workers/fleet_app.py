"""The user app the worker-fleet tests run: ``LUNORA_APP=fleet_app:build_app`` (this folder on PYTHONPATH).

Every tool counts its side effects durably in Redis (``FLEET_REDIS_URL``, keys under ``FLEET_PREFIX``):

- ``<prefix>:exec``     hash idempotency_key -> number of executions (every attempt, even a killed one);
- ``<prefix>:effects``  hash idempotency_key -> the effect's value, written with HSETNX: the dedupe a
  real side-effecting tool does on ``ctx.idempotency_key``;
- ``<prefix>:applied``  hash idempotency_key -> how many times the effect was actually applied
  (incremented only when HSETNX created the entry) — must end at exactly 1 for every key.

``patient`` and ``stubborn`` run on ``Outage``, a model that fails the first calls of each run input
(each call's time in ``<prefix>:calls:<input>``), under their own ``retry=`` policies; ``timed``
blocks a tool past its ``run_timeout_s``.

``block`` applies its effect, records its process id in ``<prefix>:pids``, announces itself on
``<prefix>:entered`` and then waits until the flag ``<prefix>:release`` is set, so a test can SIGKILL the
worker while the step is provably in the middle.
"""

from __future__ import annotations

import os
import signal
import time
from functools import cache
from typing import Any

import redis

from lunora_jobs.agent import define_agent
from lunora_jobs.models.base import ModelTurn
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn, tool_calls_turn
from lunora_jobs.tools import ToolContext, define_tool

# The step tasks' soft time limit (workers.time_limits): longer than any wait on the test's flags.
# A killed step's lease lapses after LUNORA_LEASE_S (the Fleet sets 2 s; the default is 6 s).
STEP_TIMEOUT_S = float(os.environ.get("FLEET_STEP_TIMEOUT_S", "30"))
LEASE_MARGIN_S = float(os.environ.get("FLEET_LEASE_MARGIN_S", "0.5"))
@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["FLEET_REDIS_URL"], decode_responses=True)


def _key(name: str) -> str:
    return f"{os.environ['FLEET_PREFIX']}:{name}"


# The insert-if-absent and its count in one script: a kill between two separate commands would
# leave an effect applied but not counted (the chaos run once killed a tool exactly there).
_APPLY_ONCE = ("if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then "
               "return redis.call('HINCRBY', KEYS[2], ARGV[1], 1) end return 0")


def apply_effect_once(key: str, value: str) -> None:
    """Count an execution under ``key``, then apply the effect unless one is applied under it."""
    r = _redis()
    r.hincrby(_key("exec"), key, 1)
    r.eval(_APPLY_ONCE, 2, _key("effects"), _key("applied"), key, value)


def _apply_effect(ctx: ToolContext, value: str) -> None:
    apply_effect_once(ctx.idempotency_key, value)


def _record(args: dict[str, Any], ctx: ToolContext) -> str:
    _apply_effect(ctx, args["value"])
    return f"recorded {args['value']}"


def _block(args: dict[str, Any], ctx: ToolContext) -> str:
    _apply_effect(ctx, args["value"])
    r = _redis()
    r.hset(_key("pids"), ctx.idempotency_key, os.getpid())
    r.rpush(_key("entered"), ctx.idempotency_key)
    # A flag, not a token: a token popped by a worker killed mid-BLPOP would be lost with it.
    deadline = time.monotonic() + 60
    while not r.exists(_key("release")):
        if time.monotonic() > deadline:
            raise TimeoutError("fleet test never released the blocking tool")
        time.sleep(0.02)
    return f"released {args['value']}"


def _crash(args: dict[str, Any], ctx: ToolContext) -> str:
    # A poison call: it takes its worker process down with it, every time it runs.
    _redis().hincrby(_key("exec"), ctx.idempotency_key, 1)
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


_SCHEMA = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
record = define_tool(name="record", description="Record a value once.", input_schema=_SCHEMA, execute=_record)
block = define_tool(
    name="block", description="Record a value, then wait for the test.", input_schema=_SCHEMA, execute=_block
)

crash = define_tool(
    name="crash", description="Kill the process running it.", input_schema=_SCHEMA, execute=_crash
)

fanout = define_agent(
    name="fanout",
    instructions="Record things in parallel.",
    model=ScriptedModel([
        tool_calls_turn([("f1", "record", {"value": "a"}), ("f2", "record", {"value": "b"}),
                         ("f3", "record", {"value": "c"})]),
        tool_calls_turn([("f4", "record", {"value": "d"}), ("f5", "record", {"value": "e"})]),
        final_turn("all recorded"),
    ]),
    tools=[record],
    step_timeout_s=STEP_TIMEOUT_S,
)

crashy = define_agent(
    name="crashy",
    instructions="Record, block, record.",
    model=ScriptedModel([
        tool_calls_turn([("c1", "record", {"value": "a"}), ("c2", "record", {"value": "b"})]),
        tool_call_turn("c3", "block", {"value": "c"}),
        tool_call_turn("c4", "record", {"value": "d"}),
        final_turn("survived"),
    ]),
    tools=[record, block],
    step_timeout_s=STEP_TIMEOUT_S,
)

lossy = define_agent(
    name="lossy",
    instructions="Block one call while its siblings wait in the broker.",
    model=ScriptedModel([
        tool_calls_turn([("l1", "block", {"value": "a"}), ("l2", "record", {"value": "b"}),
                         ("l3", "record", {"value": "c"})]),
        tool_call_turn("l4", "record", {"value": "d"}),
        final_turn("recovered"),
    ]),
    tools=[record, block],
    step_timeout_s=STEP_TIMEOUT_S,
)

poison = define_agent(
    name="poison",
    instructions="Call the poison tool.",
    model=ScriptedModel([tool_call_turn("p1", "crash", {"value": "x"}), final_turn("never")]),
    tools=[crash],
    step_timeout_s=STEP_TIMEOUT_S,
    max_attempts=2,
)

class Unavailable(Exception):
    """Shaped like an SDK's status error: HTTP 503, retried."""

    status_code = 503


class Outage:
    """Fails the first ``failures`` calls for each user input with ``error(n)``, then answers."""

    name = "outage"

    def __init__(self, failures: int, error: type[Exception]) -> None:
        self.failures, self.error = failures, error

    def generate(self, messages: Any, **options: Any) -> ModelTurn:
        text = next(str(m.get("content")) for m in messages if m.get("role") == "user")
        calls = _redis().rpush(_key(f"calls:{text}"), repr(time.time()))
        if calls <= self.failures:
            raise self.error(f"call {calls} failed")
        return final_turn(f"answered on call {calls}")


RETRY_BASE_S, RETRY_CAP_S = 0.4, 0.5
patient = define_agent(
    name="patient", instructions="Answer.", model=Outage(3, Unavailable), step_timeout_s=STEP_TIMEOUT_S,
    retry={"max_attempts": 3, "base_s": RETRY_BASE_S, "cap_s": RETRY_CAP_S},
)
stubborn = define_agent(
    name="stubborn", instructions="Answer.", model=Outage(99, ValueError), step_timeout_s=STEP_TIMEOUT_S,
    retry={"max_attempts": 5, "give_up_on": [ValueError]},
)
RUN_TIMEOUT_S = 2.0
timed = define_agent(
    name="timed",
    instructions="Block, then answer.",
    model=ScriptedModel([tool_call_turn("t1", "block", {"value": "t"}), final_turn("in time")]),
    tools=[block],
    step_timeout_s=STEP_TIMEOUT_S,
    run_timeout_s=RUN_TIMEOUT_S,
)

AGENTS = [fanout, crashy, lossy, poison, patient, stubborn, timed]


def build_app() -> Any:
    """A fresh ``Lunora`` app on the current environment (the tests build one per test)."""
    from lunora_jobs.runtime import Lunora

    # The fleet's own Redis namespace for run/sweep locks: a sweep lock left by a worker killed in
    # another test must not make this fleet's sweeps skip.
    app = Lunora.from_env(agents=AGENTS, redis_prefix=os.environ["FLEET_PREFIX"])
    app.deps.lease_margin_s = LEASE_MARGIN_S
    return app
