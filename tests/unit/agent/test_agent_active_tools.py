"""active_tools pins what the model sees; a name the agent does not declare, or a pin that hides a
memory tool, is refused at declaration."""

from __future__ import annotations

import pytest

from lunora_jobs import define_agent, tool
from lunora_jobs.errors import InvalidAgentOptionError
from lunora_jobs.loop import PrepareStepResult
from lunora_jobs.testing import agent_harness, final_turn


@tool
def lookup(order_id: str) -> str:
    """Look up an order."""
    return order_id


@tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return order_id


def test_an_unknown_pinned_name_raises_naming_it_and_the_tools() -> None:
    expected = r"active_tools names 'lookupp'.*its tools: lookup, refund"
    with pytest.raises(InvalidAgentOptionError, match=expected):
        define_agent(name="a", model="offline", tools=[lookup, refund], active_tools=["lookupp"])
    with pytest.raises(InvalidAgentOptionError, match="list of tool names"):
        define_agent(name="a", model="offline", tools=[lookup], active_tools="lookup")  # type: ignore[arg-type]


def test_a_pin_that_hides_a_memory_tool_raises() -> None:
    memory = {"source": "rag:docs", "mode": "agentic"}
    with pytest.raises(InvalidAgentOptionError, match=r"leaves out the memory tool.*'search_memory'"):
        define_agent(name="a", model="offline", tools=[lookup], memory=memory, active_tools=["lookup"])
    agent = define_agent(name="a", model="offline", tools=[lookup], memory=memory,
                         active_tools=["lookup", "search_memory"])
    assert agent.active_tools == ("lookup", "search_memory")


def test_the_model_sees_only_the_pinned_tools_unless_prepare_step_picks() -> None:
    pinned = define_agent(name="pinned", model="offline", tools=[lookup, refund], active_tools=["lookup"])
    harness = agent_harness(pinned, script=[final_turn("ok")])
    harness.run(input="hi", thread_key="p1")
    assert harness.model.call_options[0]["tools"] == ["lookup"]
    picked = define_agent(name="picked", model="offline", tools=[lookup, refund], active_tools=["lookup"],
                          prepare_step=lambda args: PrepareStepResult(active_tools=["refund"]))
    harness = agent_harness(picked, script=[final_turn("ok")])
    harness.run(input="hi", thread_key="p2")
    assert harness.model.call_options[0]["tools"] == ["refund"]
