"""Prompt building: tool results in call order whatever order they finished in."""

from __future__ import annotations

from lunora_jobs.engine.prompt import order_history, prepare_prompt, replace_system
from lunora_jobs.store.records import MessageRecord


def msg(
    seq: int,
    role: str,
    content: str | None = None,
    *,
    calls: list[str] | None = None,
    call_id: str | None = None,
) -> MessageRecord:
    tool_calls = [
        {"id": c, "type": "function", "function": {"name": "t", "arguments": "{}"}} for c in calls or []
    ]
    return MessageRecord(
        str(seq), "th", f"k{seq}", role, content, "r", tool_calls or None, call_id, None, None, seq, 0
    )


def test_parallel_results_are_listed_in_call_order() -> None:
    history = [
        msg(1, "user", "hi"),
        msg(2, "assistant", calls=["c1", "c2", "c3"]),
        msg(3, "tool", "third", call_id="c3"),  # finished first
        msg(4, "tool", "first", call_id="c1"),
        msg(5, "tool", "second", call_id="c2"),
        msg(6, "assistant", "done"),
    ]
    ordered = order_history(history)
    assert [m.content for m in ordered] == ["hi", None, "first", "second", "third", "done"]


def test_prompt_has_system_first_and_chat_shapes() -> None:
    history = [msg(1, "user", "hi"), msg(2, "assistant", calls=["c1"]), msg(3, "tool", "ok", call_id="c1")]
    prompt = prepare_prompt("Be brief.", history)
    assert prompt.messages[0] == {"role": "system", "content": "Be brief."}
    assert prompt.messages[2]["tool_calls"][0]["id"] == "c1"
    assert prompt.messages[3] == {"role": "tool", "content": "ok", "tool_call_id": "c1"}
    assert prompt.brief is None


def test_replace_system_keeps_the_compaction_brief() -> None:
    messages = [
        {"role": "system", "content": "old"},
        {"role": "system", "content": "[compacted history: 4 messages, 2 assistant turns]\nbrief"},
        {"role": "user", "content": "hi"},
    ]
    replaced = replace_system(messages, "new")
    assert [m["content"] for m in replaced][:2] == ["new", messages[1]["content"]]
    assert len(replaced) == 3
