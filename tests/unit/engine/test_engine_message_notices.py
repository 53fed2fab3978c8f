"""Every turn and tool step that wrote thread messages is announced once, after its commit, on the
thread's event bus: a live stream hears of a tool's result without polling."""

from __future__ import annotations

from typing import Any

from lunora_jobs import define_agent, define_tool
from lunora_jobs.testing import agent_harness, final_turn, tool_calls_turn


def test_each_message_writing_step_is_announced_after_its_messages_exist() -> None:
    echo = define_tool(name="echo", description="Echo.", input_schema={"type": "object"},
                       execute=lambda args, ctx: args)
    agent = define_agent(name="notices", instructions="i", tools=[echo], max_turns=4)
    harness = agent_harness(agent, script=[
        tool_calls_turn([("a", "echo", {"x": 1}), ("b", "echo", {"x": 2})]), final_turn("done"),
    ])
    seen: dict[str, bool] = {}  # step -> was its message stored when the notice arrived
    notices: list[dict[str, Any]] = []

    def written(step: str) -> bool:
        messages = harness.messages("t-n")
        if step.startswith("tool:"):
            return any(m.role == "tool" and m.tool_call_id == step.rsplit(":", 1)[1] for m in messages)
        turn = int(step.rsplit(":", 1)[1])
        return any(m.role == "assistant" and (m.metadata or {}).get("turn") == turn for m in messages)

    def listen(event: dict[str, Any]) -> None:
        if event["type"] == "messages":
            notices.append(event)
            seen[event["step"]] = written(event["step"])

    harness.app.events.subscribe(listen)
    result = harness.run(input="go", thread_key="t-n")
    assert result.status == "completed"
    assert seen == {"llm:turn:0": True, "tool:echo:a": True, "tool:echo:b": True, "llm:turn:1": True}
    assert len(notices) == 4  # once each
    assert {n["thread_key"] for n in notices} == {"t-n"}
    assert {n["run_id"] for n in notices} == {result.run_id}


def test_a_replayed_step_is_not_announced_again() -> None:
    agent = define_agent(name="once", instructions="i", max_turns=2)
    harness = agent_harness(agent, script=[final_turn("done")])
    count: list[str] = []
    harness.app.events.subscribe(lambda e: count.append(e["step"]) if e["type"] == "messages" else None)
    result = harness.run(input="go", thread_key="t-r")
    assert harness.app.execute_step(result.run_id, "llm:turn:0").status == "replayed"
    assert count == ["llm:turn:0"]
