"""Every loop-control option of define_agent, driven through the real engine by the harness."""

from __future__ import annotations

from typing import Any

from harness_support import get_weather, weather_agent, weather_stub
from pydantic import BaseModel

from lunora_jobs import (
    ModelTurn,
    PrepareStepArgs,
    PrepareStepResult,
    RepairArgs,
    ScriptedModel,
    StepFinish,
    ToolCall,
    Usage,
    final_turn,
    has_tool_call,
    tool,
    tool_call_turn,
    tool_calls_turn,
)
from lunora_jobs.testing import RecordingModel, agent_harness

FUNCTIONS = {"weather:lookup": weather_stub}


def looping_script(n: int) -> list[ModelTurn]:
    return [tool_call_turn(f"c{i}", "get_weather", {"city": f"City{i}"}) for i in range(n)]


def test_max_turns_stops_with_max_turns_after_running_the_last_tools() -> None:
    harness = agent_harness(weather_agent(max_turns=3), script=looping_script(10), functions=FUNCTIONS)
    result = harness.run(input="loop", thread_key="t")
    assert (result.status, result.stopped, result.turns) == ("completed", "maxTurns", 3)
    assert len(harness.model.calls) == 3
    # The third turn's call still ran, so the transcript never ends on an unanswered tool call.
    assert [m.role for m in harness.messages("t")][-2:] == ["assistant", "tool"]
    assert [d["args"]["city"] for d in harness.dispatches] == ["City0", "City1", "City2"]
    assert harness.thread("t").active_run_id is None


def test_stop_when_has_tool_call_reports_stop_condition() -> None:
    script = [
        tool_call_turn("c1", "get_weather", {"city": "Paris"}),
        tool_call_turn("c2", "finalize", {"answer": "Sunny"}, text="Done."),
        final_turn("never reached"),
    ]
    harness = agent_harness(
        weather_agent(stop_when=has_tool_call("finalize")), script=script, functions=FUNCTIONS
    )
    result = harness.run(input="Paris?", thread_key="t")
    assert (result.stopped, result.turns, result.text) == ("stopCondition", 2, "Done.")
    assert harness.messages("t")[-1].content == "recorded: Sunny"  # finalize itself ran
    assert len(harness.model.calls) == 2


def test_a_clean_answer_reports_final_even_with_stop_when() -> None:
    harness = agent_harness(weather_agent(stop_when=has_tool_call("finalize")), script=[final_turn("Hi")])
    assert harness.run(input="hi").stopped == "final"


def test_prepare_step_swaps_model_trims_messages_and_forces_a_tool() -> None:
    swapped = RecordingModel(
        ScriptedModel(
            [
                tool_call_turn("x", "get_weather", {"city": "Lima"}),
                final_turn("from the swapped model"),
            ],
            name="big",
        )
    )
    seen: list[PrepareStepArgs] = []

    def prepare(args: PrepareStepArgs) -> PrepareStepResult | dict[str, Any] | None:
        seen.append(args)
        if args.step_number == 0:
            return {"toolChoice": "required", "activeTools": ["get_weather"]}
        return PrepareStepResult(
            model=swapped, messages=[args.messages[0], *args.messages[-2:]], system="Be terse."
        )

    harness = agent_harness(
        weather_agent(prepare_step=prepare),
        script=[
            tool_call_turn("c1", "get_weather", {"city": "Quito"}),
        ],
        functions=FUNCTIONS,
    )
    result = harness.run(input="Quito?", thread_key="t")
    assert result.text == "from the swapped model"
    assert [a.step_number for a in seen] == [0, 1]
    assert harness.model.call_options[0]["tool_choice"] == "required"
    assert harness.model.call_options[0]["tools"] == ["get_weather"]
    assert len(harness.model.calls) == 1 and len(swapped.calls) == 1
    trimmed = swapped.calls[0]
    assert trimmed[0] == {"role": "system", "content": "Be terse."}
    assert [m["role"] for m in trimmed] == ["system", "assistant", "tool"]


def test_repair_tool_call_fixes_bad_input_inside_the_turn() -> None:
    repairs: list[RepairArgs] = []

    def repair(args: RepairArgs) -> ToolCall | None:
        repairs.append(args)
        return ToolCall(
            id="ignored", name=args.tool_call.name, arguments={"city": str(args.tool_call.arguments["town"])}
        )

    harness = agent_harness(
        weather_agent(repair_tool_call=repair),
        script=[
            tool_call_turn("c1", "get_weather", {"town": "Kyiv"}),
            final_turn("ok"),
        ],
        functions=FUNCTIONS,
    )
    result = harness.run(input="Kyiv?", thread_key="t")
    assert result.stopped == "final"
    assert harness.dispatches == [{"path": "weather:lookup", "args": {"city": "Kyiv"}}]
    assert len(repairs) == 1 and repairs[0].input_schema is not None
    assert "city" in str(repairs[0].error)
    # The repaired call (same id) is what the ledger memoized and the transcript shows.
    turn0 = harness.steps(result.run_id)[0].result
    assert turn0["turn"]["tool_calls"][0] == {
        "id": "c1",
        "name": "get_weather",
        "arguments": {"city": "Kyiv"},
        "raw_arguments": None,
    }
    # A replay of the turn returns the memo without asking repair again.
    assert harness.app.execute_step(result.run_id, "llm:turn:0").status == "replayed"
    assert len(repairs) == 1


def test_invalid_tool_input_without_repair_becomes_a_tool_error_the_next_turn_sees() -> None:
    harness = agent_harness(
        weather_agent(),
        script=[
            tool_call_turn("c1", "get_weather", {"town": "Kyiv"}),
            tool_call_turn("c2", "get_weather", {"city": "Kyiv"}),
            final_turn("ok"),
        ],
        functions=FUNCTIONS,
    )
    result = harness.run(input="Kyiv?", thread_key="t")
    assert (result.status, result.stopped) == ("completed", "final")
    error = harness.messages("t")[2]
    assert error.role == "tool" and error.tool_call_id == "c1"
    assert "Invalid input for tool 'get_weather'" in (error.content or "")
    assert harness.model.calls[1][-1]["content"] == error.content  # the model saw it
    assert harness.dispatches == [{"path": "weather:lookup", "args": {"city": "Kyiv"}}]
    assert not any(s.name == "tool:get_weather:c1" for s in harness.steps(result.run_id))


def test_unknown_tools_and_unparseable_arguments_are_answered_not_crashed() -> None:
    garbled = ModelTurn(tool_calls=[ToolCall("c2", "get_weather", {}, raw_arguments="{city: Oslo")])
    harness = agent_harness(
        weather_agent(),
        script=[
            tool_call_turn("c1", "teleport", {"to": "Mars"}),
            garbled,
            final_turn("sorry"),
        ],
    )
    result = harness.run(input="go", thread_key="t")
    assert result.stopped == "final"
    tool_messages = [m.content or "" for m in harness.messages("t") if m.role == "tool"]
    assert "Unknown tool 'teleport'" in tool_messages[0]
    assert "not valid JSON" in tool_messages[1]


def test_parallel_tool_calls_fan_out_and_one_next_turn_follows() -> None:
    harness = agent_harness(
        weather_agent(),
        script=[
            tool_calls_turn(
                [
                    ("a", "get_weather", {"city": "A"}),
                    ("b", "get_weather", {"city": "B"}),
                    ("c", "finalize", {"answer": "x"}),
                ]
            ),
            final_turn("three done"),
        ],
        functions=FUNCTIONS,
    )
    result = harness.run(input="all", thread_key="t")
    assert result.stopped == "final"
    steps = [t.step for t in harness.dispatched]
    assert steps.count("llm:turn:1") == 1
    assert steps[1:4] == ["tool:get_weather:a", "tool:get_weather:b", "tool:finalize:c"]
    assert [m.tool_call_id for m in harness.messages("t") if m.role == "tool"] == ["a", "b", "c"]
    keys = [m.key.split(":", 1)[1] for m in harness.messages("t")]
    assert keys == ["user:0", "assistant:0", "tool:0.0", "tool:0.1", "tool:0.2", "assistant:1"]


def test_structured_output_is_parsed_into_result_output() -> None:
    class Answer(BaseModel):
        answer: str
        confidence: float = 0.5

    harness = agent_harness(
        weather_agent(output=Answer),
        script=[
            final_turn(output={"answer": "sunny", "confidence": 0.9}),
        ],
    )
    result = harness.run(input="?", thread_key="t")
    assert result.output == Answer(answer="sunny", confidence=0.9)
    assert harness.model.call_options[0]["output_schema"]["required"] == ["answer"]


def test_output_that_does_not_parse_fails_the_run_with_a_named_error() -> None:
    harness = agent_harness(
        weather_agent(output={"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
        script=[final_turn("not json")],
    )
    result = harness.run(input="?", thread_key="t")
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith("OutputParseError")
    assert result.text == "not json"
    assert harness.thread("t").active_run_id is None


def test_on_step_finish_sees_each_turn_with_its_tool_results() -> None:
    finished: list[StepFinish] = []
    harness = agent_harness(
        weather_agent(on_step_finish=finished.append),
        script=[
            tool_call_turn("c1", "get_weather", {"city": "Bern"}),
            final_turn("Mild."),
        ],
        functions=FUNCTIONS,
    )
    harness.run(input="Bern?", thread_key="t")
    assert [f.step_number for f in finished] == [0, 1]
    assert finished[0].tool_results == [
        {
            "tool_call_id": "c1",
            "name": "get_weather",
            "output": {"city": "Bern", "sky": "sunny", "temp_c": 21},
            "is_error": False,
        }
    ]
    assert finished[1].turn.text == "Mild." and finished[1].tool_results == []


def test_a_failing_on_step_finish_never_fails_the_run() -> None:
    calls: list[int] = []

    def broken(finish: StepFinish) -> None:
        calls.append(finish.step_number)
        raise RuntimeError("observer down")

    harness = agent_harness(weather_agent(on_step_finish=broken), script=[final_turn("Mild.")])
    result = harness.run(input="Bern?", thread_key="t")
    assert calls == [0]  # it was called ...
    assert result.status == "completed" and result.text == "Mild."  # ... and its failure was not the run's


def test_compaction_summarizes_inside_the_memoized_turn() -> None:
    summarizer = RecordingModel(
        ScriptedModel([final_turn("Ada likes tea.", usage=Usage(7, 3))] * 10, name="cheap")
    )
    agent = weather_agent(compaction={"max_messages": 4, "keep_recent": 2, "model": summarizer})
    harness = agent_harness(agent, script=[final_turn(f"answer {i}") for i in range(4)])
    results = [harness.run(input=f"question {i}", thread_key="t") for i in range(3)]
    # Histories: 1, 3, 5 messages: only the third run's turn exceeds max_messages=4.
    assert len(summarizer.calls) == 1
    third_prompt = harness.model.calls[2]
    assert third_prompt[0]["role"] == "system"
    assert third_prompt[1]["role"] == "system" and "Ada likes tea." in third_prompt[1]["content"]
    assert [m["content"] for m in third_prompt[2:]] == ["answer 1", "question 2"]
    run_id = results[2].run_id
    memo = harness.store.get_step(run_id, "llm:turn:0")
    assert memo is not None and "Ada likes tea." in memo.result["brief"]
    assert harness.store.get_run(run_id).input_tokens >= 7  # the summary's tokens are paid for by the turn
    # A replay returns the memo: no second summary, no second model call.
    calls_before = len(harness.model.calls)
    assert harness.app.execute_step(run_id, "llm:turn:0").status == "replayed"
    assert len(summarizer.calls) == 1 and len(harness.model.calls) == calls_before


def test_a_flaky_tool_is_retried_through_the_ledger() -> None:
    failures = {"left": 2}

    @tool
    def flaky(q: str) -> str:
        """Sometimes fails."""
        if failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("upstream 503")
        return f"ok {q}"

    harness = agent_harness(
        weather_agent(tools=[flaky]),
        script=[
            tool_call_turn("f1", "flaky", {"q": "x"}),
            final_turn("done"),
        ],
    )
    result = harness.run(input="go", thread_key="t")
    assert result.stopped == "final"
    row = harness.store.get_step(result.run_id, "tool:flaky:f1")
    assert row is not None and row.attempt == 3 and row.result == {"output": "ok x", "is_error": False}


def test_a_tool_failing_every_attempt_gives_the_model_an_error_and_the_run_goes_on() -> None:
    @tool
    def broken(q: str) -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    harness = agent_harness(
        weather_agent(tools=[broken], max_attempts=3),
        script=[
            tool_call_turn("b1", "broken", {"q": "x"}),
            final_turn("I could not do it."),
        ],
    )
    result = harness.run(input="go", thread_key="t")
    assert (result.status, result.stopped) == ("completed", "final")
    error = harness.messages("t")[2].content or ""
    assert "failed after 3 attempts" in error and "disk on fire" in error
    assert harness.store.get_step(result.run_id, "tool:broken:b1").attempt == 3


def test_tool_names_resolve_through_the_agent_not_the_script() -> None:
    assert get_weather.name == "get_weather"
