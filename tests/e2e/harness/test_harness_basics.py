"""The seed's testing section, threads, usage, owners and concurrency — through the real engine."""

from __future__ import annotations

from typing import Any

import pytest
from harness_support import weather_agent, weather_stub

from lunora_jobs import ConflictError, NotFoundError, Usage, define_agent, final_turn, tool, tool_call_turn
from lunora_jobs.testing import agent_harness


def test_seed_transcript_shape_for_one_tool_call() -> None:
    harness = agent_harness(
        weather_agent(),
        script=[
            tool_call_turn("call_1", "get_weather", {"city": "Berlin"}),
            final_turn("It's sunny in Berlin."),
        ],
        functions={"weather:lookup": weather_stub},
    )
    result = harness.run(input="weather in Berlin?", thread_key="t1")
    assert result.stopped == "final"
    assert result.status == "completed"
    assert result.text == "It's sunny in Berlin."
    assert result.turns == 2
    assert [m.role for m in harness.messages("t1")] == ["user", "assistant", "tool", "assistant"]
    assert {"args": {"city": "Berlin"}, "path": "weather:lookup"} in harness.dispatches
    tool_message = harness.messages("t1")[2]
    assert tool_message.tool_call_id == "call_1"
    assert '"temp_c": 21' in (tool_message.content or "")
    names = {s.name for s in harness.steps(result.run_id)}
    assert names == {"llm:turn:0", "tool:get_weather:call_1", "llm:turn:1"}
    thread = harness.thread("t1")
    assert thread.status == "completed" and thread.active_run_id is None


def test_idempotency_key_is_the_step_name() -> None:
    keys: list[str] = []

    @tool
    def charge(amount: float, ctx: Any) -> str:
        """Charge a card."""
        keys.append(ctx.idempotency_key)
        return "charged"

    agent = define_agent(name="billing", model="offline", tools=[charge])
    harness = agent_harness(agent, script=[tool_call_turn("c_9", "charge", {"amount": 5}), final_turn("ok")])
    harness.run(input="charge me", thread_key="b")
    assert keys == ["tool:charge:c_9"]


def test_usage_accumulates_on_run_and_thread() -> None:
    script = [
        tool_call_turn("c1", "get_weather", {"city": "Oslo"}, usage=Usage(100, 10)),
        final_turn("Cold.", usage=Usage(150, 20)),
        final_turn("Still cold.", usage=Usage(300, 5)),
    ]
    harness = agent_harness(weather_agent(), script=script, functions={"weather:lookup": weather_stub})
    first = harness.run(input="Oslo?", thread_key="t")
    assert first.usage == Usage(250, 30)
    second = harness.run(input="And now?", thread_key="t")
    assert second.usage == Usage(300, 5)
    thread = harness.thread("t")
    assert (thread.input_tokens, thread.output_tokens) == (550, 35)


def test_reusing_a_thread_key_continues_the_conversation() -> None:
    harness = agent_harness(weather_agent(), script=[final_turn("Hi Ada."), final_turn("You are Ada.")])
    harness.run(input="I am Ada.", thread_key="chat")
    result = harness.run(input="Who am I?", thread_key="chat")
    assert result.text == "You are Ada."
    second_prompt = harness.model.calls[1]
    assert [(m["role"], m["content"]) for m in second_prompt] == [
        ("system", "You are a helpful support agent."),
        ("user", "I am Ada."),
        ("assistant", "Hi Ada."),
        ("user", "Who am I?"),
    ]
    assert [m.role for m in harness.messages("chat")] == ["user", "assistant", "user", "assistant"]


def test_instructions_callable_is_resolved_once_per_run() -> None:
    calls: list[dict[str, Any]] = []

    def instructions(context: dict[str, Any]) -> str:
        calls.append(context)
        return f"Serve {context['owner']}."

    agent = define_agent(name="support", instructions=instructions, model="offline")
    harness = agent_harness(agent, script=[final_turn("one")])
    harness.run(input="hi", thread_key="t", owner="user-7")
    assert len(calls) == 1 and calls[0]["owner"] == "user-7" and calls[0]["input"] == "hi"
    assert harness.model.calls[0][0] == {"role": "system", "content": "Serve user-7."}


def test_instructions_are_not_re_resolved_across_turns() -> None:
    count = {"n": 0}

    def instructions(context: dict[str, Any]) -> str:
        count["n"] += 1
        return f"version {count['n']}"

    agent = weather_agent(instructions=instructions)
    harness = agent_harness(
        agent,
        script=[
            tool_call_turn("c1", "get_weather", {"city": "Rome"}),
            final_turn("Warm."),
        ],
        functions={"weather:lookup": weather_stub},
    )
    harness.run(input="Rome?", thread_key="t")
    assert count["n"] == 1
    assert [call[0]["content"] for call in harness.model.calls] == ["version 1", "version 1"]


def test_threads_are_owner_gated_and_strangers_see_not_found() -> None:
    harness = agent_harness(weather_agent(), script=[final_turn("hello")])
    harness.run(input="hi", thread_key="private", owner="user-7")
    threads = harness.app.threads
    assert [m.role for m in threads.messages("private", viewer="user-7")] == ["user", "assistant"]
    with pytest.raises(NotFoundError) as stranger:
        threads.messages("private", viewer="user-8")
    with pytest.raises(NotFoundError) as anonymous:
        threads.get("private")
    with pytest.raises(NotFoundError) as missing:
        threads.messages("no-such-thread", viewer="user-8")
    assert str(stranger.value) == "no thread 'private'" == str(anonymous.value)
    assert str(missing.value) == "no thread 'no-such-thread'"


def test_another_owner_cannot_run_on_an_owned_thread() -> None:
    harness = agent_harness(weather_agent(), script=[final_turn("a"), final_turn("b")])
    harness.run(input="hi", thread_key="t", owner="alice")
    with pytest.raises(ConflictError):
        harness.run(input="hi", thread_key="t", owner="mallory")


def test_a_second_run_on_a_busy_thread_is_rejected() -> None:
    @tool(needs_approval=True)
    def wire(amount: float) -> str:
        """Wire money."""
        return "sent"

    agent = define_agent(name="banker", model="offline", tools=[wire])
    harness = agent_harness(agent, script=[tool_call_turn("w1", "wire", {"amount": 10}), final_turn("done")])
    waiting = harness.run(input="wire 10", thread_key="t")
    assert waiting.status == "awaiting_input"
    assert harness.thread("t").status == "awaiting_input"
    assert harness.thread("t").active_run_id == waiting.run_id
    with pytest.raises(ConflictError, match="already has run"):
        harness.run(input="again", thread_key="t")
    # The wait is a ledger fact, not a task: nothing was dispatched for the approval.
    assert all(not t.step.startswith("approval:") for t in harness.dispatched)


def test_cancel_frees_the_thread() -> None:
    @tool(needs_approval=True)
    def wire(amount: float) -> str:
        """Wire money."""
        return "sent"

    agent = define_agent(name="banker", model="offline", tools=[wire])
    harness = agent_harness(agent, script=[tool_call_turn("w1", "wire", {"amount": 10}), final_turn("done")])
    waiting = harness.run(input="wire 10", thread_key="t")
    client = harness.app.agents.banker
    assert client.cancel(waiting.run_id) is True
    assert client.status(waiting.run_id) == "cancelled"
    assert harness.thread("t").status == "cancelled"
    assert harness.thread("t").active_run_id is None
    assert client.cancel(waiting.run_id) is False


def test_tool_state_hooks_read_and_write_thread_state() -> None:
    @tool
    def advance(note: str, ctx: Any) -> str:
        """Record the next step of the plan."""
        current = ctx.get_state()
        if ctx.idempotency_key in current["applied"]:
            return "recorded"
        ctx.set_state(
            {
                "applied": [*current["applied"], ctx.idempotency_key],
                "plan": [*current["plan"], note],
                "step": current["step"] + 1,
            }
        )
        return "recorded"

    agent = define_agent(
        name="planner", model="offline", tools=[advance], initial_state={"applied": [], "plan": [], "step": 0}
    )
    harness = agent_harness(
        agent,
        script=[
            tool_call_turn("a1", "advance", {"note": "draft"}),
            final_turn("planned"),
        ],
    )
    harness.run(input="plan", thread_key="p")
    assert harness.thread("p").state == {"applied": ["tool:advance:a1"], "plan": ["draft"], "step": 1}


def test_a_run_cancelled_during_its_final_model_call_stays_cancelled() -> None:
    from lunora_jobs import ModelTurn

    box: dict[str, Any] = {}

    class CancellingModel:
        name = "cancelling"

        def generate(self, messages: Any, **options: Any) -> ModelTurn:
            harness = box["harness"]
            harness.app.agents.support.cancel(harness.store.list_runs()[0].id)
            return final_turn("too late")

    harness = agent_harness(weather_agent(), model=CancellingModel())
    box["harness"] = harness
    result = harness.run(input="hi", thread_key="t")
    assert (result.status, result.stopped) == ("cancelled", "cancelled")
    assert harness.thread("t").status == "cancelled" and harness.thread("t").active_run_id is None


def test_a_long_run_does_not_grow_the_stack() -> None:
    import sys

    turns = 150
    script = [tool_call_turn(f"c{i}", "get_weather", {"city": f"C{i}"}) for i in range(turns)]
    harness = agent_harness(
        weather_agent(max_turns=turns + 1),
        script=[*script, final_turn("done")],
        functions={"weather:lookup": weather_stub},
    )
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)  # a recursive loop would need thousands of frames for 301 steps
    try:
        result = harness.run(input="go", thread_key="t")
    finally:
        sys.setrecursionlimit(limit)
    assert (result.stopped, result.turns) == ("final", turns + 1)
    assert len(harness.steps(result.run_id)) == 2 * turns + 1


def test_replace_policy_cancels_the_run_in_flight_and_takes_the_thread() -> None:
    @tool(needs_approval=True)
    def wire(amount: float) -> str:
        """Wire money."""
        return "sent"

    agent = define_agent(name="banker", model="offline", tools=[wire], on_concurrent_run="replace")
    harness = agent_harness(agent, script=[tool_call_turn("w1", "wire", {"amount": 10}), final_turn("hello")])
    first = harness.run(input="wire 10", thread_key="t")
    assert first.status == "awaiting_input"
    second = harness.run(input="never mind", thread_key="t")
    assert harness.result(first.run_id).status == "cancelled"
    assert (second.status, second.text) == ("completed", "hello")
    assert harness.thread("t").active_run_id is None
    # The cancelled run's unanswered call is closed in the prompt, as providers require.
    roles = [(m["role"], m.get("tool_call_id")) for m in harness.model.calls[-1]]
    assert roles == [("user", None), ("assistant", None), ("tool", "w1"), ("user", None)]
