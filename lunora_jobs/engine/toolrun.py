"""Running a tool's ``execute`` for the engine: a ``ToolContext`` wired to the run. The tool step
(``kinds/tool.py``) and the proposal worker (``actions/execute.py``, with the proposal's idempotency
key, under which ``ctx.memo`` rows are kept too) both run tools through here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.memo import LocatedCall
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.state import state_accessors
from lunora_jobs.engine.toolmemo import step_memo
from lunora_jobs.store.records import RunRecord
from lunora_jobs.tools import ToolContext


def execute_tool(
    deps: EngineDeps, run: RunRecord, agent: AgentDefinition, located: LocatedCall, key: str,
    approvals: Mapping[str, Any] | None = None,
) -> Any:
    """Run the tool's ``execute`` with a ``ToolContext`` wired to this run (raises what the tool raises).

    ``key``: the tool step's name, or a proposal's stable key (``ctx.idempotency_key``).
    ``approvals``: the decisions on the parts of a call gated part by part (``ctx.approval``).
    """
    info = run_info(run)
    tool_def = agent.tools.get(located.call.name)
    if tool_def is None:
        raise LookupError(f"tool {located.call.name!r} is no longer declared on agent {agent.name!r}")
    get_state, set_state = state_accessors(deps, run.thread_id, info.thread_key)

    def run_function(path: str, args: dict[str, Any], idempotency_key: str | None = None) -> Any:
        return deps.run_function(path, args, idempotency_key or key)

    ctx = ToolContext(
        idempotency_key=key, run_id=run.id, thread_key=info.thread_key, owner=run.owner,
        tool_call_id=located.call.id, _run_function=run_function, _get_state=get_state, _set_state=set_state,
        _memo=step_memo(deps, run.id, key, agent), _approvals=approvals,
    )
    return tool_def.execute(located.call.arguments, ctx)
