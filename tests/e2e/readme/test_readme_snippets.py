"""The README's testing snippet, verbatim in behaviour: if this breaks, the README is lying."""

from __future__ import annotations

from lunora_jobs import ToolContext, define_agent, tool
from lunora_jobs.testing import agent_harness, final_turn, tool_call_turn


@tool
def get_weather(city: str, ctx: ToolContext) -> object:
    """Look up the current weather for a city."""
    return ctx.run("weather:lookup", {"city": city})


def test_readme_harness_snippet_runs_as_documented() -> None:
    support = define_agent(name="support", instructions="Be helpful.", tools=[get_weather], model="offline")
    harness = agent_harness(
        support,
        script=[
            tool_call_turn("call_1", "get_weather", {"city": "Berlin"}),
            final_turn("It's sunny in Berlin."),
        ],
        functions={"weather:lookup": lambda args: {"temp_c": 21}},
    )
    result = harness.run(input="weather in Berlin?", thread_key="t1")
    assert result.stopped == "final"
    assert result.text == "It's sunny in Berlin."
    assert [m.role for m in harness.messages("t1")] == ["user", "assistant", "tool", "assistant"]
    assert harness.dispatches == [{"path": "weather:lookup", "args": {"city": "Berlin"}}]
