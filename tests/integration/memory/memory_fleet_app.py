"""The app of the memory worker-kill test: ``LUNORA_APP=memory_fleet_app:build_app``.

The agent ``diarist`` has episodic memory, ``grapher`` graph memory. Their model answers a turn at
once; a memory write's call (``memory:episode``'s summary, ``memory:extract``'s extraction) counts
itself in Redis (``<prefix>:writes``), records its process id, announces itself on
``<prefix>:entered`` and waits for the flag ``<prefix>:release`` — so the test can SIGKILL the worker
while the memory write is provably in the middle.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from functools import cache
from typing import Any

import redis

from lunora_jobs.agent import define_agent
from lunora_jobs.memory import episodic, graph
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
        ask = messages[-1]["content"]
        if ask not in (episodic.INSTRUCTIONS, graph.INSTRUCTIONS):
            return final_turn("Order 42 ships on Friday.")
        step = "memory:episode" if ask == episodic.INSTRUCTIONS else "memory:extract"
        r = _redis()
        r.incr(_key("writes"))
        r.rpush(_key("entered"), step)
        r.hset(_key("pids"), step, os.getpid())
        deadline = time.monotonic() + 60
        while not r.exists(_key("release")):
            if time.monotonic() > deadline:
                raise TimeoutError("the memory test never released the summary")
            time.sleep(0.02)
        if step == "memory:extract":
            return final_turn(json.dumps(EXTRACTION))
        return final_turn("The user asked when order 42 ships; told Friday.")


EXTRACTION = {
    "entities": [{"name": "Alice", "type": "person"}, {"name": "Order 42", "type": "order"}],
    "relations": [{"src": "Alice", "relation": "placed", "dst": "Order 42"},
                  {"src": "Order 42", "relation": "ships_on", "dst": "Friday"}],
}

diarist = define_agent(
    name="diarist", instructions="Be brief.", model=lambda settings: BlockingSummaryModel(),
    memory={"kind": "episodic", "episodic": {"recall": 5}}, step_timeout_s=STEP_TIMEOUT_S,
)


grapher = define_agent(
    name="grapher", instructions="Be brief.", model=lambda settings: BlockingSummaryModel(),
    memory={"kind": "graph"}, step_timeout_s=STEP_TIMEOUT_S,
)


def build_app() -> Any:
    """A fresh ``Lunora`` app on the current environment."""
    from lunora_jobs.runtime import Lunora

    app = Lunora.from_env(agents=[diarist, grapher], redis_prefix=os.environ["FLEET_PREFIX"])
    app.deps.lease_margin_s = LEASE_MARGIN_S
    return app
