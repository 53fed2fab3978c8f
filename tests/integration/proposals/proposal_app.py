"""The user app the independent-approval worker tests run: ``LUNORA_APP=proposal_app:build_app``
(this folder on PYTHONPATH). Its counters live on the fleet's private Redis db under ``PROP_PREFIX``:

- ``<prefix>:attempts``  every execution of ``charge_card``'s body: ``<idempotency key>|<pid>``;
- ``<prefix>:effects``   the charges that happened: the tool dedupes on ``ctx.idempotency_key``
  with ``SET NX``, as a payment API's idempotency key would;
- ``<prefix>:entered`` / ``<prefix>:release``: with ``PROP_BLOCK=1`` the tool blocks after its
  attempt is recorded until the test releases it (so a worker can be killed mid-execution).
"""

from __future__ import annotations

import os
import time
from functools import cache
from typing import Any

import redis
from proposal_model import ChargeModel

from lunora_jobs.agent import define_agent
from lunora_jobs.tools import ToolContext, define_tool


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["PROP_REDIS_URL"], decode_responses=True)


def key(name: str) -> str:
    """A Redis key under this test's prefix."""
    return f"{os.environ['PROP_PREFIX']}:{name}"


def _charge(args: dict[str, Any], ctx: ToolContext) -> str:
    r = _redis()
    r.rpush(key("attempts"), f"{ctx.idempotency_key}|{os.getpid()}")
    if r.get(key("block")) == "1":
        r.rpush(key("entered"), ctx.idempotency_key)
        deadline = time.monotonic() + 60
        while r.lpop(key("release")) is None:  # polled: the client's socket timeout is shorter
            if time.monotonic() > deadline:
                raise TimeoutError("the test never released the blocking charge")
            time.sleep(0.05)
    if r.set(key(f"effect:{ctx.idempotency_key}"), "1", nx=True):
        r.rpush(key("effects"), ctx.idempotency_key)
    return f"charged {args['amount']}"


def _note(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"noted {args['value']}"


_AMOUNT = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}
_VALUE = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
charge_card = define_tool(name="charge_card", description="Charge the saved card.", input_schema=_AMOUNT,
                          execute=_charge, needs_approval=lambda i: i["amount"] > 5000)
note = define_tool(name="note", description="Write a note.", input_schema=_VALUE, execute=_note)
payer = define_agent(name="payer", instructions="Test agent.", model=ChargeModel(), tools=[charge_card, note],
                     action_approval_mode="independent", step_timeout_s=20)


def build_app() -> Any:
    """A fresh ``Lunora`` app on the current environment."""
    from lunora_jobs.runtime import Lunora

    return Lunora.from_env(agents=[payer], redis_prefix=os.environ["PROP_PREFIX"])
