"""The app the deployment tests run on real workers: ``LUNORA_APP=deploy_app:app`` (this folder on
PYTHONPATH).

- ``router``: one call of the ``where`` tool, which answers with the worker pool running it
  (``DEPLOY_POOL``, set per worker), then a final answer — the transcript shows where a step ran.
- ``assistant`` (only with ``DEPLOY_AUTO_MODEL=1``): ``model="auto"``, the default a new user keeps.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from lunora_jobs.agent import define_agent
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn
from lunora_jobs.tools import define_tool


def _where(args: dict[str, Any]) -> str:
    return os.environ.get("DEPLOY_POOL", "default")


where = define_tool(
    name="where", description="Name the worker pool running this call.",
    input_schema={"type": "object", "properties": {}}, execute=_where,
)
router = define_agent(
    name="router", instructions="Ask where.", tools=[where],
    model=ScriptedModel([tool_call_turn("c1", "where", {}), final_turn("done")]),
)


@cache
def _app() -> Any:
    from lunora_jobs.runtime import Lunora

    agents = [router]
    if os.environ.get("DEPLOY_AUTO_MODEL") == "1":
        agents.append(define_agent(name="assistant", instructions="Help."))
    return Lunora.from_env(agents=agents, redis_prefix=os.environ["DEPLOY_PREFIX"])


def __getattr__(name: str) -> Any:
    if name == "app":
        return _app()
    raise AttributeError(name)
