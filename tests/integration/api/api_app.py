"""The user app the API tests serve and run: ``LUNORA_APP=api_app:app`` (this folder on PYTHONPATH).

``ApiInputModel`` is deterministic and stateless — it answers from the prompt alone, the way a replayed
turn must — so the workers and the API process agree on every turn:

- ``count <n>``: calls ``tick`` once per turn, n times (each tick sleeps ``API_TICK_S``), then answers;
- ``charge <amount>``: calls ``charge_card`` (approval needed above 5000), then reports the result;
- ``block <v>``: calls ``block``, which waits until the test sets ``<prefix>:release`` in Redis;
- ``remember <v>``: writes the synced state;
- ``flaky <amount>``: charges ``amount`` (no approval below 5000), then its next turn is refused with
  an HTTP 400-like error (terminal: the run fails at once) until the test sets ``<prefix>:fixed``;
- anything else is answered directly.

With ``API_STREAM_MODEL_URL`` set, the ``streamer`` agent answers through the OpenAI adapter from
that OpenAI-wire test server (token streaming).
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
    return redis.Redis.from_url(os.environ["LUNORA_REDIS_URL"], decode_responses=True)


def _key(name: str) -> str:
    return f"{os.environ['API_TEST_PREFIX']}:{name}"


def _tick(args: dict[str, Any], ctx: ToolContext) -> str:
    time.sleep(float(os.environ.get("API_TICK_S", "0.2")))
    return f"tick {args['i']}"


def _charge(args: dict[str, Any], ctx: ToolContext) -> str:
    _redis().rpush(_key("charges"), ctx.idempotency_key)
    return f"charged {args['amount']:g}"


def _block(args: dict[str, Any], ctx: ToolContext) -> str:
    deadline = time.monotonic() + 60
    while not _redis().exists(_key("release")):
        if time.monotonic() > deadline:
            raise TimeoutError("the test never released the blocking tool")
        time.sleep(0.05)
    return f"released {args['value']}"


def _remember(args: dict[str, Any], ctx: ToolContext) -> str:
    ctx.set_state({"note": args["value"]})
    return "remembered"


_I = {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}
_AMOUNT = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}
_VALUE = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
tick = define_tool(name="tick", description="Wait a moment.", input_schema=_I, execute=_tick)
charge_card = define_tool(name="charge_card", description="Charge the saved card.", input_schema=_AMOUNT,
                          execute=_charge, needs_approval=lambda i: i["amount"] > 5000)
block = define_tool(name="block", description="Wait for the test.", input_schema=_VALUE, execute=_block)
remember = define_tool(name="remember", description="Remember a note.", input_schema=_VALUE,
                       execute=_remember)


class ProviderRefused(Exception):
    """Shaped like an SDK's status error: HTTP 400 is terminal (no retry can fix it)."""

    status_code = 400


class ApiInputModel:
    """See the module docstring."""

    name = "api-input-model"

    def generate(
        self, messages: Sequence[dict[str, Any]], *, tools: Sequence[ToolSpec] = (),
        tool_choice: Any = "auto", output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        """One deterministic turn."""
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        last_user = users[-1] if users else -1
        text = str(messages[last_user].get("content") if users else "")
        results = [m for m in messages[last_user + 1 :] if m.get("role") == "tool"]
        verb, _, arg = text.partition(" ")
        if verb == "flaky" and results and not _redis().exists(_key("fixed")):
            raise ProviderRefused("HTTP 400: the provider refused this turn")
        if verb == "count":
            done = len(results)
            if done < int(arg):
                return ModelTurn(tool_calls=[ToolCall(f"tick-{done + 1}", "tick", {"i": done + 1})])
            return ModelTurn(text=f"counted {arg}")
        if results:
            return ModelTurn(text=f"saw: {results[-1].get('content')}")
        if verb in ("charge", "flaky"):
            return ModelTurn(tool_calls=[ToolCall(f"{verb}-{arg}", "charge_card", {"amount": float(arg)})])
        if verb == "block":
            return ModelTurn(tool_calls=[ToolCall(f"block-{arg}", "block", {"value": arg})])
        if verb == "remember":
            return ModelTurn(tool_calls=[ToolCall(f"remember-{arg}", "remember", {"value": arg})])
        return ModelTurn(text=f"answer to {text}")


support = define_agent(name="support", instructions="Test agent.", model=ApiInputModel(),
                       tools=[tick, charge_card, block, remember], step_timeout_s=20,
                       initial_state={"note": None}, max_turns=40)


def _streaming_model(settings: Any) -> Any:
    from lunora_jobs.models.openai import OpenAIModel

    return OpenAIModel("test-model-2026", api_key="test-key", base_url=os.environ["API_STREAM_MODEL_URL"])


# Token-streaming tests only: a real OpenAI adapter against the test's OpenAI-wire server.
streamer = define_agent(name="streamer", instructions="Answer at length.", model=_streaming_model,
                        step_timeout_s=20, max_turns=2)


def _agents() -> list[Any]:
    # Read when an app is built, not at import: the test process imports this module once per session,
    # and an app built for a later token-streaming test must declare (and so sweep) its streamer.
    return [support, streamer] if os.environ.get("API_STREAM_MODEL_URL") else [support]


# Governance tests only: an independent-mode agent (a charge above 5000 becomes an action proposal)
# and quotas, so the console shows proposals, usage and quota statuses.
payer = define_agent(name="payer", instructions="Test agent.", model=ApiInputModel(), tools=[charge_card],
                     action_approval_mode="independent", step_timeout_s=20)


def build_app() -> Any:
    """A fresh ``Lunora`` app on the current environment."""
    from lunora_jobs import Quota
    from lunora_jobs.runtime import Lunora

    if not os.environ.get("API_GOVERNANCE"):
        return Lunora.from_env(agents=_agents(), redis_prefix=os.environ["API_TEST_PREFIX"])
    quotas = [Quota("actor", tokens=1_000_000), Quota("tenant", tokens=5_000_000, window=3600)]
    return Lunora.from_env(agents=[*_agents(), payer], redis_prefix=os.environ["API_TEST_PREFIX"],
                           quotas=quotas)


@cache
def _app() -> Any:
    return build_app()


def __getattr__(name: str) -> Any:
    # ``app`` is built on first access (PEP 562), in each process, after any fork.
    if name == "app":
        return _app()
    raise AttributeError(name)
