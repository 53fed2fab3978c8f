"""define_skill and how define_agent folds skills in."""

from __future__ import annotations

from typing import Any

import pytest

from lunora_jobs.agent import define_agent
from lunora_jobs.errors import DuplicateToolError, InvalidAgentOptionError
from lunora_jobs.skills import SkillDefinition, define_skill
from lunora_jobs.tools import tool


@tool
def lookup_order(order_id: str) -> str:
    """Find an order."""
    return order_id


@tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return order_id


def test_skills_fold_tools_and_instructions_in_order() -> None:
    billing = define_skill("billing", "Confirm the order id first.", tools=[lookup_order, refund])
    tone = define_skill("tone", lambda ctx: f"Address {ctx['owner']} by name.")
    assert isinstance(billing, SkillDefinition) and list(billing.tools) == ["lookup_order", "refund"]

    @tool
    def greet(name: str) -> str:
        """Say hello."""
        return name

    agent = define_agent(
        name="support", model="offline", instructions="You help.", tools=[greet], skills=[billing, tone]
    )
    assert list(agent.tools) == ["greet", "lookup_order", "refund"]
    context: dict[str, Any] = {"run_id": "r", "thread_key": "t", "owner": "Ada", "input": "hi"}
    assert agent.resolve_instructions(context) == (
        "You help.\n\nConfirm the order id first.\n\nAddress Ada by name."
    )


def test_tool_name_collisions_are_declaration_errors() -> None:
    billing = define_skill("billing", tools=[refund])
    returns = define_skill("returns", tools={"refund": lookup_order})
    with pytest.raises(DuplicateToolError, match=r"'refund'.*the agent.*skill 'billing'"):
        define_agent(name="a", model="offline", tools=[refund], skills=[billing])
    with pytest.raises(DuplicateToolError, match="skill 'billing' and skill 'returns'"):
        define_agent(name="a", model="offline", skills=[billing, returns])
    with pytest.raises(DuplicateToolError):
        define_skill("x", tools=[refund, refund])


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: define_skill("bad name"), "Skill name"),
        (lambda: define_skill("s", 5), "instructions"),  # type: ignore[arg-type]
        (lambda: define_skill("s", tools=["refund"]), "not a tool"),  # type: ignore[list-item]
        (lambda: define_agent(name="a", model="offline", skills=[{"name": "x"}]), "define_skill"),  # type: ignore[list-item]
        (
            lambda: define_agent(name="a", model="offline", skills=[define_skill("s"), define_skill("s")]),
            "twice",
        ),
    ],
)
def test_bad_skills(build: Any, match: str) -> None:
    with pytest.raises(InvalidAgentOptionError, match=match):
        build()
