"""``agent_as_tool``: a supervisor agent delegates to a specialist agent, each call a child run.

The tool's calls never run ``execute`` in a worker: the engine starts the specialist as a child run
on the queue (its run id and thread key derive from the supervisor's tool step, so a retried or
taken-over step finds the same child), parks the supervisor until the child ends (no worker held),
and answers the call with the child's final answer. Cancelling the supervisor's run cancels the
child; the child's tokens are added to the supervisor run's totals. See ``engine/children.py``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.errors import InvalidToolError, ToolError
from lunora_jobs.tools import NeedsApproval, ToolContext, ToolDefinition, define_tool


def agent_as_tool(
    agent: AgentDefinition,
    *,
    description: str,
    name: str | None = None,
    needs_approval: NeedsApproval = False,
) -> ToolDefinition:
    """A tool that hands the model's ``input`` (the task, in full) to ``agent`` as a child run.

    ``name`` defaults to the agent's name. The specialist is registered with the app that runs the
    supervisor (``Lunora`` adds it when it is not listed). Example::

        researcher = define_agent(name="researcher", instructions="Research the question.")
        lead = define_agent(name="lead", tools=[agent_as_tool(researcher, description="Deep research.")])
        app = Lunora(agents=[lead])
    """
    if not isinstance(agent, AgentDefinition):
        raise InvalidToolError(
            f"agent_as_tool: {agent!r} is not an agent; pass one made by define_agent(...).")
    tool_name = name or agent.name
    schema = {
        "type": "object",
        "properties": {"input": {"type": "string", "description": (
            f"The task for {agent.name}, complete: it sees nothing else of this conversation.")}},
        "required": ["input"],
        "additionalProperties": False,
    }

    def execute(input: dict[str, Any], ctx: ToolContext) -> Any:
        raise ToolError(f"the agent tool {tool_name!r} runs only as an agent's own tool (each call is "
                        "a child run the engine starts); it cannot be called inline or composed.")

    tool = define_tool(tool_name, description=description, input_schema=schema, execute=execute,
                       needs_approval=needs_approval)
    return replace(tool, delegate=agent)
