"""define_agent: declaration-time validation and the shape of AgentDefinition."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from lunora_jobs.agent import AgentDefinition, define_agent
from lunora_jobs.config import Settings
from lunora_jobs.errors import (
    ConfigurationError,
    DuplicateToolError,
    InvalidAgentOptionError,
    UnknownModelProviderError,
)
from lunora_jobs.loop import CompactionOptions, has_tool_call
from lunora_jobs.models.offline import OfflineModel
from lunora_jobs.models.scripted import ScriptedModel, final_turn
from lunora_jobs.tools import ToolContext, define_tool, tool


@tool
def get_weather(city: str) -> str:
    """Look up the current weather for a city."""
    return f"sunny in {city}"


@tool
def finalize(answer: str) -> str:
    """Finish with an answer."""
    return answer


class Answer(BaseModel):
    answer: str
    confidence: float = 0.5


def test_defaults_and_fields() -> None:
    agent = define_agent(name="support", instructions="Be nice.", model="offline")
    assert isinstance(agent, AgentDefinition)
    assert agent.max_turns == 10
    assert agent.on_concurrent_run == "reject"
    assert agent.action_approval_mode == "blocking"
    assert agent.max_attempts == 5
    assert agent.step_timeout_s == 300.0
    assert agent.tools == {} and agent.stop_when == () and agent.compaction is None and agent.output is None
    with pytest.raises(AttributeError):
        agent.max_turns = 3  # type: ignore[misc]  # frozen


def test_tools_from_list_and_dict() -> None:
    from_list = define_agent(name="a", model="offline", tools=[get_weather, finalize])
    assert list(from_list.tools) == ["get_weather", "finalize"]
    from_dict = define_agent(name="a", model="offline", tools={"weather": get_weather})
    assert list(from_dict.tools) == ["weather"]
    assert from_dict.tools["weather"].name == "weather"
    assert from_dict.tool_specs()[0].name == "weather"
    assert [s.name for s in from_list.tool_specs(active=["finalize"])] == ["finalize"]


def test_dict_key_names_an_anonymous_tool() -> None:
    anon = define_tool(description="x", input_schema={"type": "object"}, execute=lambda i: 1)
    assert anon.name == ""
    agent = define_agent(name="a", model="offline", tools={"lookup": anon})
    assert agent.tools["lookup"].name == "lookup"
    with pytest.raises(InvalidAgentOptionError, match="has no name"):
        define_agent(name="a", model="offline", tools=[anon])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"name": "bad name"}, InvalidAgentOptionError, "name"),
        ({"name": ""}, InvalidAgentOptionError, "name"),
        ({"name": "9lives"}, InvalidAgentOptionError, "name"),
        ({"max_turns": 0}, InvalidAgentOptionError, "max_turns"),
        ({"max_turns": True}, InvalidAgentOptionError, "max_turns"),
        ({"max_attempts": 0}, InvalidAgentOptionError, "max_attempts"),
        ({"step_timeout_s": 0}, InvalidAgentOptionError, "step_timeout_s"),
        ({"tools": [lambda: 1]}, InvalidAgentOptionError, "not a tool"),
        ({"tools": "get_weather"}, InvalidAgentOptionError, "tools must be"),
        ({"tools": [get_weather, get_weather]}, DuplicateToolError, "get_weather"),
        ({"on_concurrent_run": "wait"}, InvalidAgentOptionError, "on_concurrent_run"),
        ({"action_approval_mode": "maybe"}, InvalidAgentOptionError, "action_approval_mode"),
        ({"compaction": {"max_messages": 4, "keep_recent": 4}}, InvalidAgentOptionError, "keep_recent"),
        ({"compaction": {"max_messages": 1}}, InvalidAgentOptionError, "max_messages"),
        ({"compaction": {"keep_recent": 2}}, InvalidAgentOptionError, "max_messages"),
        ({"compaction": 40}, InvalidAgentOptionError, "compaction"),
        ({"compaction": {"max_messages": 4, "model": "nope:x"}}, UnknownModelProviderError, "nope"),
        ({"output": "json"}, InvalidAgentOptionError, "output"),
        ({"output": int}, InvalidAgentOptionError, "output"),
        ({"output": {"type": "objekt"}}, InvalidAgentOptionError, "output"),
        ({"prepare_step": "first"}, InvalidAgentOptionError, "prepare_step"),
        ({"repair_tool_call": 1}, InvalidAgentOptionError, "repair_tool_call"),
        ({"on_step_finish": "print"}, InvalidAgentOptionError, "on_step_finish"),
        ({"on_email": 3}, InvalidAgentOptionError, "on_email"),
        ({"stop_when": ["finalize"]}, InvalidAgentOptionError, "stop_when"),
        ({"instructions": 42}, InvalidAgentOptionError, "instructions"),
        ({"initial_state": {"when": object()}}, InvalidAgentOptionError, "initial_state"),
        ({"model": "mistral:large"}, UnknownModelProviderError, "mistral"),
        ({"model": "gpt-4o"}, UnknownModelProviderError, "openai:gpt-4o"),
        ({"model": 3}, ConfigurationError, "model"),
    ],
)
def test_bad_options_fail_at_declaration(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    options: dict[str, Any] = {"name": "support", "model": "offline", **kwargs}
    with pytest.raises(error, match=match):
        define_agent(**options)


def test_errors_are_configuration_errors_naming_the_agent() -> None:
    with pytest.raises(ConfigurationError, match=r"Agent 'support'.*max_turns"):
        define_agent(name="support", model="offline", max_turns=0)


def test_options_are_normalized() -> None:
    agent = define_agent(
        name="support",
        model="offline",
        tools=[finalize],
        stop_when=has_tool_call("finalize"),
        compaction={"maxMessages": 5},
        output=Answer,
        initial_state={"step": 0},
    )
    assert len(agent.stop_when) == 1
    assert agent.compaction == CompactionOptions(max_messages=5, keep_recent=3)
    assert agent.output is not None and agent.output.model_class is Answer
    assert agent.output.json_schema["required"] == ["answer"]
    schema_agent = define_agent(
        name="s",
        model="offline",
        output={"properties": {"answer": {"type": "string"}}, "required": ["answer"]},
    )
    assert schema_agent.output is not None and schema_agent.output.json_schema["type"] == "object"


def test_models_resolve() -> None:
    settings = Settings(openai_api_key=None, openai_base_url=None)
    scripted = ScriptedModel([final_turn("hi")])
    assert define_agent(name="a", model=scripted).resolve_model(settings) is scripted
    assert isinstance(define_agent(name="a", model="offline").resolve_model(settings), OfflineModel)
    assert isinstance(define_agent(name="a").resolve_model(settings), OfflineModel)  # "auto", no key
    built = define_agent(name="a", model=lambda s: scripted).resolve_model(settings)
    assert built is scripted


def test_instructions_resolve_once_with_run_context() -> None:
    seen: list[dict[str, Any]] = []

    def instructions(ctx: dict[str, Any]) -> str:
        seen.append(ctx)
        return f"Help {ctx['owner']}."

    agent = define_agent(name="a", model="offline", instructions=instructions)
    context = {"run_id": "r1", "thread_key": "t1", "owner": "user-7", "input": "hi"}
    assert agent.resolve_instructions(context) == "Help user-7."
    assert seen == [context]
    bad = define_agent(name="a", model="offline", instructions=lambda c: 3)  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigurationError, match="return a str"):
        bad.resolve_instructions(context)


def test_tool_context_parameter_is_not_in_agent_tool_schema() -> None:
    @tool
    def remember(note: str, ctx: ToolContext) -> None:
        """Save a note."""

    agent = define_agent(name="a", model="offline", tools=[remember])
    assert agent.tool_specs()[0].parameters["properties"].keys() == {"note"}


def test_unknown_options_get_a_named_error_with_the_right_spelling() -> None:
    with pytest.raises(InvalidAgentOptionError, match="'maxTurns' \\(did you mean 'max_turns'\\?\\)"):
        define_agent(name="a", model="offline", maxTurns=3)
    with pytest.raises(InvalidAgentOptionError, match="did you mean 'instructions'"):
        define_agent(name="a", model="offline", instruction="x")
