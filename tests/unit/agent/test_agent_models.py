"""ScriptedModel (stateless playback) and OfflineModel (deterministic offline default)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from lunora_jobs.errors import ScriptExhaustedError
from lunora_jobs.models import Model, ModelTurn, ToolCall, Usage, assistant_message, tool_message
from lunora_jobs.models.offline import OfflineModel
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn, tool_calls_turn
from lunora_jobs.tools import tool


@tool
def get_weather(city: str) -> str:
    """Look up the current weather for a city."""
    return f"sunny in {city}"


@tool
def lookup_order(order_id: str, include_items: bool = False) -> str:
    """Find a customer order by its id and show its status."""
    return order_id


@tool
def send_email(to: str, subject: str, count: int) -> str:
    """Send an email message to a recipient."""
    return to


TOOLS = [get_weather.spec(), lookup_order.spec(), send_email.spec()]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_scripted_model_is_stateless() -> None:
    script = [tool_call_turn("call_1", "get_weather", {"city": "Berlin"}), final_turn("Sunny.")]
    model = ScriptedModel(script)
    assert isinstance(model, Model)
    first = [user("Weather?")]
    turn0 = model.generate(first)
    assert turn0.tool_calls == [ToolCall("call_1", "get_weather", {"city": "Berlin"})]
    assert turn0.model == "scripted"
    # The same prompt gives the same turn, from this or a fresh instance (another worker, a replay).
    assert model.generate(first) == turn0 == ScriptedModel(script).generate(first)
    second = [*first, assistant_message(turn0), tool_message("call_1", "sunny")]
    assert model.generate(second).text == "Sunny."
    with pytest.raises(ScriptExhaustedError, match="2 turns"):
        model.generate([*second, assistant_message(final_turn("Sunny.")), user("more")])


def test_scripted_model_counts_turns_folded_into_a_compaction_brief() -> None:
    model = ScriptedModel([final_turn("a"), final_turn("b"), final_turn("c")])
    brief = {"role": "system", "content": "[compacted history: 4 messages, 2 assistant turns]\nSummary."}
    assert model.generate([brief, user("next")]).text == "c"


def test_turn_builders() -> None:
    structured = final_turn(output={"answer": "42"}, usage=Usage(3, 4))
    assert json.loads(structured.text or "") == {"answer": "42"} and structured.usage.total_tokens == 7

    class Answer(BaseModel):
        answer: str

    assert json.loads(final_turn(output=Answer(answer="x")).text or "") == {"answer": "x"}
    parallel = tool_calls_turn(
        [("a", "get_weather", {"city": "Oslo"}), ("b", "lookup_order", {"order_id": "1"})]
    )
    assert [c.id for c in parallel.tool_calls] == ["a", "b"] and parallel.finish_reason == "tool_calls"
    assert ModelTurn.from_json(parallel.to_json()) == parallel


def test_offline_model_calls_the_best_matching_tool() -> None:
    model = OfflineModel()
    assert isinstance(model, Model) and model.name == "offline"
    turn = model.generate([user("What's the weather in Berlin?")], tools=TOOLS)
    assert turn.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("get_weather", {"city": "Berlin"})]
    assert turn.tool_calls[0].id == "offline_0_0"
    order = model.generate([user("Where is my order A-1234?")], tools=TOOLS).tool_calls[0]
    assert (order.name, order.arguments) == ("lookup_order", {"order_id": "A-1234"})
    email = model.generate(
        [user("Send an email to bob@example.com about 3 invoices")], tools=TOOLS
    ).tool_calls[0]
    assert email.name == "send_email"
    jsonschema.validate(email.arguments, send_email.input_schema)
    assert email.arguments["to"] == "bob@example.com" and email.arguments["count"] == 3


def test_offline_model_respects_tool_choice() -> None:
    model = OfflineModel()
    assert model.generate([user("Hello there")], tools=TOOLS).tool_calls == []  # nothing matches: answer
    forced = model.generate([user("Hello there")], tools=TOOLS, tool_choice="required")
    assert len(forced.tool_calls) == 1
    named = model.generate(
        [user("Weather in Oslo")], tools=TOOLS, tool_choice={"type": "tool", "name": "send_email"}
    )
    assert named.tool_calls[0].name == "send_email"
    assert model.generate([user("Weather in Oslo")], tools=TOOLS, tool_choice="none").tool_calls == []


def test_offline_model_summarizes_tool_results_and_is_labelled() -> None:
    model = OfflineModel()
    prompt = [{"role": "system", "content": "Be brief."}, user("What's the weather in Berlin?")]
    call_turn = model.generate(prompt, tools=TOOLS)
    follow = [*prompt, assistant_message(call_turn), tool_message(call_turn.tool_calls[0].id, {"temp_c": 21})]
    answer = model.generate(follow, tools=TOOLS)
    assert answer.tool_calls == [] and answer.finish_reason == "stop"
    assert answer.text is not None and answer.text.startswith("[offline model]")
    assert "get_weather returned" in answer.text and "21" in answer.text
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0
    plain = model.generate([user("hi")])
    assert (
        plain.text is not None and plain.text.startswith("[offline model]") and "OPENAI_API_KEY" in plain.text
    )


def test_offline_model_output_schema_answers_validate() -> None:
    class Answer(BaseModel):
        answer: str
        confidence: float
        tags: list[str]
        level: int = 2

    schema = Answer.model_json_schema()
    turn = OfflineModel().generate([user("Is it raining in Paris?")], output_schema=schema)
    data = json.loads(turn.text or "")
    Answer.model_validate(data)
    jsonschema.validate(data, schema)
    nested = {
        "type": "object",
        "properties": {
            "status": {"enum": ["ok", "error"]},
            "items": {"type": "array", "minItems": 2, "items": {"$ref": "#/$defs/Item"}},
            "score": {"type": "integer", "minimum": 5, "maximum": 9},
        },
        "required": ["status", "items", "score"],
        "$defs": {
            "Item": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        },
    }
    jsonschema.validate(
        json.loads(OfflineModel().generate([user("x")], output_schema=nested).text or ""), nested
    )


def test_offline_model_is_deterministic() -> None:
    prompt = [user("What's the weather in Berlin?")]
    turns = {
        json.dumps(OfflineModel().generate(prompt, tools=TOOLS).to_json(), sort_keys=True) for _ in range(5)
    }
    assert len(turns) == 1
