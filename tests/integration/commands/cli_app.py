"""The app of the CLI-as-subprocesses test: ``LUNORA_APP=cli_app:build_app`` (this folder on PYTHONPATH).
``support`` answers at once; ``billing`` calls ``refund``, which waits for an approval."""

from __future__ import annotations

from lunora_jobs import Lunora, ToolContext, define_agent, tool
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn


@tool(needs_approval=True)
def refund(amount: float, ctx: ToolContext) -> str:
    """Refund the customer."""
    return f"refunded {amount}"


support = define_agent(name="support", instructions="Help.", model=ScriptedModel([final_turn("hello there")]))
billing = define_agent(name="billing", instructions="Bill.", tools=[refund], model=ScriptedModel([
    tool_call_turn("call_1", "refund", {"amount": 5}), final_turn("refund done")]))


def build_app() -> Lunora:
    """What every process loads: the CLI, the worker, the test."""
    return Lunora.from_env(agents=[support, billing])
