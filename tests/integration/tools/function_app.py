"""The app the function_tool real-worker test runs (``LUNORA_APP=function_app:build_app``, this folder
on PYTHONPATH): ``billing`` calls a Celery task through ``function_tool`` and a plain registered
function through ``ctx.run`` from a tool of its own, in one turn. Every execution of either appends
``<name> <pid>`` to ``FUNCTION_LOG`` (set by the test), so the test sees where and how often they ran.
"""

from __future__ import annotations

import os
from typing import Any

from celery import shared_task

from lunora_jobs import ToolContext, define_agent, function_tool, tool
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_calls_turn


def _log(name: str) -> None:
    with open(os.environ["FUNCTION_LOG"], "a") as log:
        log.write(f"{name} {os.getpid()}\n")


@shared_task(name="function_app.charge")
def charge(amount: float, currency: str = "EUR") -> dict[str, Any]:
    """A Celery task: charge ``amount``."""
    _log("charge")
    return {"charged": amount, "currency": currency}


def double(args: dict[str, Any]) -> int:
    """A plain registered function (takes the args object)."""
    _log("double")
    return int(args["n"]) * 2


@tool
def quote(n: int, ctx: ToolContext) -> str:
    """Quote twice ``n``."""
    return f"quote: {ctx.run('billing:double', {'n': n})}"


def build_app() -> Any:
    """A ``Lunora`` app on the environment."""
    from lunora_jobs.runtime import Lunora

    charge_tool = function_tool(
        "function_app:charge", name="charge", description="Charge the customer.",
        input_schema={"type": "object", "properties": {"amount": {"type": "number"},
                                                       "currency": {"type": "string"}},
                      "required": ["amount"], "additionalProperties": False},
    )
    script = ScriptedModel([
        tool_calls_turn([("c1", "charge", {"amount": 12.5}), ("q1", "quote", {"n": 21})]),
        final_turn("charged and quoted"),
    ])
    billing = define_agent(name="billing", tools=[charge_tool, quote], step_timeout_s=60, model=script)
    return Lunora.from_env(agents=[billing], redis_prefix=os.environ["FUNCTION_PREFIX"],
                           functions={"billing:double": double})
