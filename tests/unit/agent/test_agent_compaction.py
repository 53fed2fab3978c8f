"""Message helpers and history compaction."""

from __future__ import annotations

from typing import Any

from lunora_jobs.loop import CompactionOptions
from lunora_jobs.models.base import ModelTurn, ToolCall, Usage
from lunora_jobs.models.compaction import compact, needs_compaction, split_for_compaction, summary_request
from lunora_jobs.models.messages import (
    assistant_message,
    count_assistant_turns,
    message_text,
    to_wire_messages,
    tool_message,
)
from lunora_jobs.models.scripted import ScriptedModel, final_turn


def msg(role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": text, **extra}


def test_message_helpers() -> None:
    turn = ModelTurn(text=None, tool_calls=[ToolCall("c1", "get_weather", {"city": "Köln"})])
    wire = assistant_message(turn)
    assert wire == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Köln"}'},
            }
        ],
    }
    assert "tool_calls" not in assistant_message(ModelTurn(text="hi"))
    assert tool_message("c1", {"t": 1}) == {"role": "tool", "tool_call_id": "c1", "content": '{"t": 1}'}
    assert tool_message("c1", "plain")["content"] == "plain"
    assert (
        message_text({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}]})
        == "a"
    )


def test_to_wire_messages_normalizes_engine_shapes() -> None:
    engine_shape = {
        "role": "assistant",
        "content": None,
        "metadata": {"turn": 0},
        "seq": 4,
        "tool_calls": [ToolCall("c1", "f", {"a": 1}).to_json()],
    }
    wire = to_wire_messages(
        [
            engine_shape,
            {"role": "tool", "tool_call_id": "c1", "content": {"x": 1}},
            {"role": "assistant", "content": "ok", "tool_calls": []},
        ]
    )
    assert wire[0] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
    }
    assert wire[1]["content"] == '{"x": 1}'
    assert wire[2] == {"role": "assistant", "content": "ok"}


def history(n_pairs: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n_pairs):
        out += [msg("user", f"question {i}"), msg("assistant", f"answer {i}")]
    return out


def test_no_compaction_under_the_limit() -> None:
    options = CompactionOptions(max_messages=6)
    prompt = [msg("system", "Be nice."), *history(3)]
    assert not needs_compaction(prompt, options)
    summarizer = ScriptedModel([])  # would raise if called
    assert compact(prompt, options, summarizer) == (prompt, Usage())
    assert not needs_compaction(prompt, None)


def test_compaction_folds_older_messages_into_one_brief() -> None:
    options = CompactionOptions(max_messages=6)  # keep_recent = 3
    prompt = [msg("system", "Be nice."), *history(4)]  # 8 history messages
    summarizer = ScriptedModel([final_turn("They asked 5 questions.", usage=Usage(10, 5))])
    compacted, usage = compact(prompt, options, summarizer)
    assert compacted[0] == msg("system", "Be nice.")
    assert compacted[1]["role"] == "system"
    assert (
        compacted[1]["content"]
        == "[compacted history: 5 messages, 2 assistant turns]\nThey asked 5 questions."
    )
    assert compacted[2:] == prompt[-3:]
    assert usage == Usage(10, 5)
    # Stateless models still know where they are: 2 folded + 2 visible assistant turns.
    assert count_assistant_turns(compacted) == count_assistant_turns(prompt) == 4


def test_compacting_again_carries_the_earlier_brief_forward() -> None:
    options = CompactionOptions(max_messages=4, keep_recent=2)
    first, _ = compact([msg("system", "S"), *history(3)], options, ScriptedModel([final_turn("one")]))
    grown = [*first, *history(2)]
    second, _ = compact(grown, options, ScriptedModel([final_turn("two")]))
    assert second[1]["content"].startswith("[compacted history: 8 messages, 4 assistant turns]")
    assert count_assistant_turns(second) == count_assistant_turns(grown) == 5
    request = summary_request(first[1:2])
    assert "one" in request[1]["content"]


def test_recent_tail_never_starts_with_orphaned_tool_results() -> None:
    call_turn = ModelTurn(tool_calls=[ToolCall("a", "f", {}), ToolCall("b", "f", {})])
    hist = [msg("user", "q"), assistant_message(call_turn), tool_message("a", "1"), tool_message("b", "2")]
    older, recent = split_for_compaction(hist, keep_recent=2)
    assert recent[0]["role"] == "assistant" and older == [msg("user", "q")]
    request = summary_request([hist[1]])
    assert "called f" in request[1]["content"]
