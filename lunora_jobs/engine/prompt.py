"""Build the model prompt of a turn: system instructions, the compaction brief, the history.

History comes from ``load_thread_for_turn`` in ``seq`` order. Parallel tool results are appended in
the order they finished, so ``order_history`` puts each assistant message's tool results right
after it, in call order — the prompt is the same on every replay whatever the finishing order was.

Compaction (``lunora_jobs.models.compaction``): past ``max_messages``, the older messages are folded
into one system brief. ``prepare_prompt`` runs it inside the turn step and returns the brief so the
turn's ledger result memoizes it: a replay reads the memo and never re-summarizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lunora_jobs.loop import CompactionOptions
from lunora_jobs.models.base import Model, Usage
from lunora_jobs.models.compaction import compact
from lunora_jobs.store.records import MessageRecord

Chat = dict[str, Any]
BRIEF_START = "[compacted history:"


def to_chat(message: MessageRecord) -> Chat:
    """One stored message as a chat-completions message."""
    chat: Chat = {"role": message.role, "content": message.content}
    if message.tool_calls:
        chat["tool_calls"] = message.tool_calls
    if message.tool_call_id:
        chat["tool_call_id"] = message.tool_call_id
    if message.name and message.role == "tool":
        chat["name"] = message.name
    return chat


def order_history(messages: Sequence[MessageRecord]) -> list[MessageRecord]:
    """``seq`` order, except that tool results follow their assistant message in call order."""
    by_call = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    placed: set[str] = set()
    ordered: list[MessageRecord] = []
    for message in messages:
        if message.role == "tool" and message.tool_call_id in placed:
            continue
        ordered.append(message)
        for call in message.tool_calls or []:
            result = by_call.get(str(call.get("id")))
            if result is not None and result.tool_call_id not in placed:
                ordered.append(result)
                placed.add(str(result.tool_call_id))
    return ordered


UNANSWERED = "No result: the run ended (cancelled or failed) before this tool call completed."


def close_dangling_calls(history: Sequence[Chat]) -> list[Chat]:
    """Answer tool calls that never got a result (an earlier run was cancelled mid-turn).

    Providers reject an assistant tool call without its tool message; inside one run the next turn
    only starts once every call is answered, so a gap can only come from an earlier, ended run.
    """
    answered = {m.get("tool_call_id") for m in history if m.get("role") == "tool"}
    closed: list[Chat] = []
    for message in history:
        closed.append(message)
        for call in message.get("tool_calls") or []:
            if call.get("id") not in answered:
                closed.append({"role": "tool", "tool_call_id": call.get("id"), "content": UNANSWERED})
    return closed


@dataclass(frozen=True, slots=True)
class Prompt:
    """A turn's prompt, with the compaction brief (if any) and what summarizing it cost."""

    messages: list[Chat]
    brief: str | None = None
    usage: Usage = field(default_factory=Usage)


def prepare_prompt(
    system: str | None,
    history: Sequence[MessageRecord],
    compaction: CompactionOptions | None = None,
    summarizer: Model | None = None,
) -> Prompt:
    """``[system] + [brief] + history`` (in call order), compacted when ``compaction`` says so."""
    messages: list[Chat] = [{"role": "system", "content": system}] if system else []
    messages.extend(close_dangling_calls([to_chat(m) for m in order_history(history)]))
    if compaction is None or summarizer is None:
        return Prompt(messages)
    compacted, usage = compact(messages, compaction, summarizer)
    brief = next(
        (m["content"] for m in compacted if m.get("role") == "system"
         and isinstance(m.get("content"), str) and m["content"].startswith(BRIEF_START)),
        None,
    )
    return Prompt(compacted, brief, usage)


def replace_system(messages: Sequence[Chat], system: str) -> list[Chat]:
    """``messages`` with the leading system instructions replaced by ``system`` (prepare_step's override)."""
    rest = list(messages)
    first = rest[0] if rest else {}
    if first.get("role") == "system" and not str(first.get("content") or "").startswith(BRIEF_START):
        rest = rest[1:]
    return [{"role": "system", "content": system}, *rest]
