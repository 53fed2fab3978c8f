"""The user app of the quota worker test: ``LUNORA_APP=quota_app:build_app`` (this folder on PYTHONPATH).

``gate`` announces itself on ``<QUOTA_PREFIX>:entered`` and waits for the flag ``<QUOTA_PREFIX>:release``
(on ``QUOTA_REDIS_URL``), so the test can spend the tenant's quota while the run is between turns.
"""

from __future__ import annotations

import os
import time
from typing import Any

import redis

from lunora_jobs import Lunora, Quota
from lunora_jobs.agent import define_agent
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn
from lunora_jobs.tools import ToolContext, define_tool

TENANT_TOKENS = 1000


def key(name: str) -> str:
    """A Redis key under this test's prefix."""
    return f"{os.environ['QUOTA_PREFIX']}:{name}"


def _gate(args: dict[str, Any], ctx: ToolContext) -> str:
    r = redis.Redis.from_url(os.environ["QUOTA_REDIS_URL"], decode_responses=True)
    r.rpush(key("entered"), ctx.idempotency_key)
    deadline = time.monotonic() + 60
    while not r.exists(key("release")):
        if time.monotonic() > deadline:
            raise TimeoutError("the quota test never released the gate")
        time.sleep(0.05)
    return "through"


gate = define_tool(name="gate", description="Wait for the test.", execute=_gate,
                   input_schema={"type": "object", "properties": {}})
spender = define_agent(name="spender", instructions="Test agent.", tools=[gate], step_timeout_s=30,
                       model=ScriptedModel([tool_call_turn("g1", "gate", {}), final_turn("never")]))


def build_app() -> Lunora:
    """The app every process of the test loads: each tenant may spend 1000 tokens a UTC day."""
    return Lunora.from_env(agents=[spender], redis_prefix=os.environ["QUOTA_PREFIX"],
                           quotas=[Quota("tenant", tokens=TENANT_TOKENS)])
