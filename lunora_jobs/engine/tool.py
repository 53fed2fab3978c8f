"""The work of one ``tool:<name>:<call_id>`` step: find the call, run the tool, build its message.

The call's arguments come from the memoized turn that made it (the ledger), never from the task
message. Exceptions are retried through the ledger up to the agent's ``max_attempts``; after the
last attempt the step completes with a tool-error message instead, so the model sees the failure on
its next turn and the run carries on (a run is never lost to a flaky tool). A worker that dies
mid-tool is different: its lease expires, the claim is taken over, and after ``max_attempts``
claims the run fails (the poison-step rule) — see ``execute.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.state import state_accessors
from lunora_jobs.engine.steps import message_key, tool_position
from lunora_jobs.models.base import ToolCall
from lunora_jobs.models.messages import tool_message
from lunora_jobs.store.records import NewMessage, RunRecord, StepCompletion
from lunora_jobs.tools import ToolContext


@dataclass(frozen=True, slots=True)
class LocatedCall:
    """A tool call and where it sits: turn number and index in that turn's call list."""

    turn: int
    index: int
    call: ToolCall
    needs_approval: bool = False
    turn_calls: tuple[ToolCall, ...] = ()
    """Every call of that turn (what its fan-in looks up in the ledger)."""


def tool_result_completion(
    run: RunRecord, located: LocatedCall, output: Any, *, is_error: bool = False
) -> StepCompletion:
    """The tool message (keyed by turn and call index) and the ledger result, in one completion."""
    content = tool_message(located.call.id, output)["content"]
    message = NewMessage(
        key=message_key(run.id, "tool", tool_position(located.turn, located.index)), role="tool",
        content=content, run_id=run.id, tool_call_id=located.call.id, name=located.call.name,
        metadata={"is_error": is_error, "turn": located.turn},
    )
    return StepCompletion(result={"output": _jsonable(output), "is_error": is_error}, messages=[message])


def execute_tool(
    deps: EngineDeps, run: RunRecord, agent: AgentDefinition, located: LocatedCall, step: str
) -> Any:
    """Run the tool's ``execute`` with a ``ToolContext`` wired to this run (raises what the tool raises)."""
    info = run_info(run)
    tool_def = agent.tools.get(located.call.name)
    if tool_def is None:
        raise LookupError(f"tool {located.call.name!r} is no longer declared on agent {agent.name!r}")
    get_state, set_state = state_accessors(deps, run.thread_id, info.thread_key)

    def run_function(path: str, args: dict[str, Any], idempotency_key: str | None = None) -> Any:
        return deps.run_function(path, args, idempotency_key or step)

    ctx = ToolContext(
        idempotency_key=step, run_id=run.id, thread_key=info.thread_key, owner=run.owner,
        tool_call_id=located.call.id, _run_function=run_function, _get_state=get_state, _set_state=set_state,
    )
    return tool_def.execute(located.call.arguments, ctx)


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        dump = getattr(value, "model_dump", None)
        return dump(mode="json") if callable(dump) else str(value)
