"""The app of the memory worker-kill test: ``LUNORA_APP=memory_fleet_app:build_app``.

The agent ``diarist`` has episodic memory. Its model answers a turn at once; a summary call (the
``memory:episode`` step) counts itself in Redis (``<prefix>:summaries``), records its process id,
announces itself on ``<prefix>:entered`` and waits for the flag ``<prefix>:release`` — so the test
can SIGKILL the worker while the memory write is provably in the middle.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from functools import cache
from typing import Any

import redis

from lunora_jobs.agent import define_agent
from lunora_jobs.memory.episodic import INSTRUCTIONS
from lunora_jobs.models.base import ModelTurn
from lunora_jobs.models.scripted import final_turn

STEP_TIMEOUT_S = 2.0
LEASE_MARGIN_S = 0.5  # a killed step's lease lapses after 2.5 s (the engine default margin is 30 s)


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["FLEET_REDIS_URL"], decode_responses=True)


def _key(name: str) -> str:
    return f"{os.environ['FLEET_PREFIX']}:{name}"


class BlockingSummaryModel:
    """Answers turns at once; blocks inside every summary until the test releases it."""

    name = "blocking-summary"

    def generate(self, messages: Sequence[dict[str, Any]], **options: Any) -> ModelTurn:
        """The answer, or (for a memory:episode call) a summary once released."""
        if messages[-1]["content"] != INSTRUCTIONS:
            return final_turn("Order 42 ships on Friday.")
        r = _redis()
        r.incr(_key("summaries"))
        r.rpush(_key("entered"), "memory:episode")
        r.hset(_key("pids"), "memory:episode", os.getpid())
        deadline = time.monotonic() + 60
        while not r.exists(_key("release")):
            if time.monotonic() > deadline:
                raise TimeoutError("the memory test never released the summary")
            time.sleep(0.02)
        return final_turn("The user asked when order 42 ships; told Friday.")


diarist = define_agent(
    name="diarist", instructions="Be brief.", model=lambda settings: BlockingSummaryModel(),
    memory={"kind": "episodic", "episodic": {"recall": 5}}, step_timeout_s=STEP_TIMEOUT_S,
)


def build_app() -> Any:
    """A fresh ``Lunora`` app on the current environment."""
    from lunora_jobs.runtime import Lunora

    app = Lunora.from_env(agents=[diarist], redis_prefix=os.environ["FLEET_PREFIX"])
    app.deps.lease_margin_s = LEASE_MARGIN_S
    return app
