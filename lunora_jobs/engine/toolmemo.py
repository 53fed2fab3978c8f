"""Durable sub-results inside one tool step: ``ctx.memo(key, fn)`` (what ``code_tool`` runs each
composed call through).

Each key is a ledger row of its own, named by the key (``<step>/<id>``, under the tool step's name),
claimed and completed with the same fenced operations as any step. A crash between two calls of a
script leaves the finished ones completed, so when the tool step is taken over and runs again, those
calls replay their recorded result instead of running twice. The planner never reads these rows (it
looks up the turn's own step names), and nothing dispatches them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.errors import ConflictError, ToolError
from lunora_jobs.store.records import StepCompletion

Memo = Callable[[str, Callable[[], Any]], Any]


def step_memo(deps: EngineDeps, run_id: str, step: str, agent: AgentDefinition) -> Memo:
    """The ``ctx.memo`` of tool step ``step``: keys must sit under it (``<step>/<id>``)."""

    def memo(key: str, fn: Callable[[], Any]) -> Any:
        if not key.startswith(step + "/") or len(key) > 255:
            raise ValueError(f"a memo key of step {step!r} must start with {step + '/'!r} (got {key!r})")
        claim = deps.store.claim_step(run_id, key, owner=deps.worker_id, lease_ms=deps.lease_ms(agent),
                                      max_attempts=agent.max_attempts)
        if claim.outcome == "completed":
            result = claim.step.result
            return result.get("output") if isinstance(result, dict) else None
        if claim.outcome == "busy":  # a worker that died mid-call still holds it: retry the step later
            raise ConflictError(f"{key!r} is still leased by another worker; the step is retried")
        if claim.outcome != "claimed":
            raise ToolError(
                f"the call {key.rsplit('/', 1)[-1]!r} did not finish in {claim.step.attempt} attempts "
                f"({claim.step.error or 'its worker died'}); it is not tried again"
            )
        generation = claim.step.generation
        try:
            output = jsonable(fn())
        except Exception as exc:  # released for the retry (a killed process leaves its lease to expire)
            deps.store.fail_step(run_id, key, generation, f"{type(exc).__name__}: {exc}")
            raise
        deps.store.complete_step(run_id, key, generation, StepCompletion(result={"output": output}))
        return output

    return memo


def jsonable(value: Any) -> Any:
    """``value`` as the JSON the ledger keeps (pydantic models dumped, anything else as ``str``):
    the first run returns exactly what a replay will."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        dump = getattr(value, "model_dump", None)
        return dump(mode="json") if callable(dump) else str(value)
