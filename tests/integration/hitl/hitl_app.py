"""The user app the HITL worker tests run: ``LUNORA_APP=hitl_app:build_app`` (this folder on PYTHONPATH).

Everything lives on one private Redis db (``HITL_REDIS_URL``; the broker too) under ``HITL_PREFIX``:

- ``<prefix>:charges``  list of ``charge_card`` executions (idempotency keys): must never exceed one
  per approved call, and stay empty for a rejected one;
- ``<prefix>:entered``  ``block`` executions that started; ``<prefix>:release`` tokens let them finish.

The model is ``InputModel``: deterministic and stateless, it answers from the prompt alone — the way
a replayed turn must — so every worker process agrees on every turn.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from functools import cache
from typing import Any

import redis

from lunora_jobs.agent import define_agent
from lunora_jobs.models.base import ModelTurn, ToolCall, ToolSpec
from lunora_jobs.tools import ToolContext, define_tool


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["HITL_REDIS_URL"], decode_responses=True)


def key(name: str) -> str:
    """A Redis key under this test's prefix."""
    return f"{os.environ['HITL_PREFIX']}:{name}"


def _charge(args: dict[str, Any], ctx: ToolContext) -> str:
    _redis().rpush(key("charges"), ctx.idempotency_key)
    return f"charged {args['amount']}"


def _block(args: dict[str, Any], ctx: ToolContext) -> str:
    r = _redis()
    r.rpush(key("entered"), ctx.idempotency_key)
    if r.blpop([key("release")], timeout=60) is None:
        raise TimeoutError("the test never released the blocking tool")
    return f"released {args['value']}"


def _record(args: dict[str, Any], ctx: ToolContext) -> str:
    _redis().rpush(key("records"), ctx.idempotency_key)
    return f"recorded {args['value']}"


def _remember(args: dict[str, Any], ctx: ToolContext) -> str:
    ctx.set_state({"note": args["value"]})
    ctx.set_state({"note": args["value"]})  # the same JSON again: must publish nothing
    return "remembered"


_AMOUNT = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}
_VALUE = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
charge_card = define_tool(name="charge_card", description="Charge the saved card.", input_schema=_AMOUNT,
                          execute=_charge, needs_approval=lambda i: i["amount"] > 5000)
block = define_tool(name="block", description="Wait for the test.", input_schema=_VALUE, execute=_block)
record = define_tool(name="record", description="Record a value.", input_schema=_VALUE, execute=_record)
remember = define_tool(name="remember", description="Remember a note in the synced state.",
                       input_schema=_VALUE, execute=_remember)


class InputModel:
    """Reads the newest user message: ``charge <n>`` / ``block <v>`` / ``block-then-record <v>`` /
    ``remember <v>`` call tools, anything else is answered directly; after a tool result it reports
    what it saw."""

    name = "hitl-input-model"

    def generate(
        self, messages: Sequence[dict[str, Any]], *, tools: Sequence[ToolSpec] = (),
        tool_choice: Any = "auto", output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        """One deterministic turn."""
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        last_user = users[-1] if users else -1
        after = list(messages[last_user + 1 :])
        text = str(messages[last_user].get("content") if users else "")
        verb, _, arg = text.partition(" ")
        tool_results = [m for m in after if m.get("role") == "tool"]
        call_id = f"{verb}-{arg}".replace(" ", "_")
        if tool_results:
            if verb == "block-then-record" and len(tool_results) == 1:
                return ModelTurn(tool_calls=[ToolCall(f"r-{arg}", "record", {"value": arg})])
            return ModelTurn(text=f"saw: {tool_results[-1].get('content')}")
        if verb == "charge":
            return ModelTurn(tool_calls=[ToolCall(call_id, "charge_card", {"amount": float(arg)})])
        if verb == "remember":
            return ModelTurn(tool_calls=[ToolCall(call_id, "remember", {"value": arg})])
        if verb in ("block", "block-then-record"):
            return ModelTurn(tool_calls=[ToolCall(call_id, "block", {"value": arg})])
        return ModelTurn(text=f"answer to {text}")


def _agent(name: str, policy: str) -> Any:
    return define_agent(name=name, instructions="Test agent.", model=InputModel(), on_concurrent_run=policy,
                        tools=[charge_card, block, record, remember], step_timeout_s=20,
                        initial_state={"note": None})


def _slow_instructions(context: Any) -> str:
    # A slow start (0.3 s between taking the thread and writing the run) widens the race window:
    # a loser must still not mistake the owner's not-yet-written run for an abandoned slot.
    time.sleep(0.3)
    return "Test agent."


payer = _agent("payer", "reject")
slowstart = define_agent(name="slowstart", instructions=_slow_instructions, model=InputModel(),
                         tools=[charge_card, block, record, remember], step_timeout_s=20)
replacer = _agent("replacer", "replace")
queuer = _agent("queuer", "queue")
AGENTS = [payer, replacer, queuer, slowstart]


def build_app() -> Any:
    """A fresh ``Lunora`` app on the current environment."""
    from lunora_jobs.runtime import Lunora

    return Lunora.from_env(agents=AGENTS, redis_prefix=os.environ["HITL_PREFIX"])
