"""Loop-control types: stop conditions, prepare_step results, compaction options, output specs."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from lunora_jobs.errors import InvalidAgentOptionError, OutputParseError
from lunora_jobs.loop import (
    CompactionOptions,
    OutputSpec,
    PrepareStepResult,
    RepairArgs,
    StepFinish,
    StopContext,
    has_tool_call,
    step_count_is,
)
from lunora_jobs.models.base import ModelTurn, ToolCall
from lunora_jobs.models.scripted import final_turn, tool_call_turn, tool_calls_turn


class Answer(BaseModel):
    answer: str
    confidence: float = 0.5


def test_has_tool_call_looks_at_the_latest_turn() -> None:
    stop = has_tool_call("finalize")
    first = tool_call_turn("c1", "finalize", {"answer": "x"})
    second = tool_call_turn("c2", "search", {})
    assert stop(StopContext(turns=[first], step_number=0)) is True
    assert stop(StopContext(turns=[first, second], step_number=1)) is False
    assert stop(StopContext(turns=[], step_number=0)) is False
    parallel = tool_calls_turn([("a", "search", {}), ("b", "finalize", {})])
    assert stop(StopContext(turns=[parallel], step_number=0)) is True


def test_step_count_is() -> None:
    turns = [final_turn("a"), final_turn("b")]
    assert step_count_is(2)(StopContext(turns=turns, step_number=1))
    assert not step_count_is(3)(StopContext(turns=turns, step_number=1))


def test_prepare_step_result_coercion() -> None:
    assert PrepareStepResult.coerce(None) == PrepareStepResult()
    result = PrepareStepResult(tool_choice="required")
    assert PrepareStepResult.coerce(result) is result
    camel = PrepareStepResult.coerce({"toolChoice": "required", "activeTools": ["search"], "system": "S"})
    assert camel == PrepareStepResult(tool_choice="required", active_tools=["search"], system="S")
    snake = PrepareStepResult.coerce({"tool_choice": {"type": "tool", "name": "search"}, "model": "offline"})
    assert snake.tool_choice == {"type": "tool", "name": "search"} and snake.model == "offline"
    with pytest.raises(InvalidAgentOptionError, match="unknown key 'tools'"):
        PrepareStepResult.coerce({"tools": []})
    with pytest.raises(InvalidAgentOptionError, match="PrepareStepResult"):
        PrepareStepResult.coerce(["required"])  # type: ignore[arg-type]


def test_compaction_defaults() -> None:
    assert CompactionOptions(max_messages=40).keep_recent == 20
    assert CompactionOptions(max_messages=5).keep_recent == 3
    assert CompactionOptions(max_messages=5, keep_recent=1).recent == 1
    assert CompactionOptions.coerce({"max_messages": 10, "model": "offline"}) == CompactionOptions(
        10, 5, "offline"
    )
    assert CompactionOptions.coerce(None) is None
    with pytest.raises(InvalidAgentOptionError, match="keep_recent"):
        CompactionOptions(max_messages=4, keep_recent=5)
    with pytest.raises(InvalidAgentOptionError, match="keep_recent"):
        CompactionOptions(max_messages=4, keep_recent=0)
    with pytest.raises(InvalidAgentOptionError, match="max_messages"):
        CompactionOptions(max_messages="40")  # type: ignore[arg-type]


def test_output_spec_from_pydantic_model() -> None:
    spec = OutputSpec.coerce(Answer)
    assert spec is not None and spec.name == "Answer"
    assert spec.json_schema["properties"]["answer"]["type"] == "string"
    parsed = spec.parse('{"answer": "42"}')
    assert parsed == Answer(answer="42", confidence=0.5)
    assert spec.parse('```json\n{"answer": "fenced", "confidence": 1}\n```') == Answer(
        answer="fenced", confidence=1
    )
    with pytest.raises(OutputParseError, match="not valid JSON"):
        spec.parse("The answer is 42")
    with pytest.raises(OutputParseError, match="does not match"):
        spec.parse('{"confidence": 0.1}')
    with pytest.raises(OutputParseError, match="no text"):
        spec.parse(None)


def test_output_spec_from_json_schema() -> None:
    schema = {
        "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
        "required": ["answer"],
    }
    spec = OutputSpec.coerce(schema)
    assert spec is not None and spec.json_schema["type"] == "object"
    assert spec.parse('{"answer": "yes", "confidence": 0.9}') == {"answer": "yes", "confidence": 0.9}
    with pytest.raises(OutputParseError, match="confidence"):
        spec.parse('{"answer": "yes", "confidence": "high"}')
    assert OutputSpec.coerce(spec) is spec and OutputSpec.coerce(None) is None
    with pytest.raises(InvalidAgentOptionError):
        OutputSpec.coerce({"type": 12})


def test_repair_args_and_step_finish_shapes() -> None:
    call = ToolCall("c1", "search", {}, raw_arguments="{bad")
    args = RepairArgs(tool_call=call, error=ValueError("bad"), tools={}, input_schema=None)
    assert args.tool_call.raw_arguments == "{bad"
    finish = StepFinish(step_number=0, turn=ModelTurn(text="hi"))
    assert finish.tool_results == []
