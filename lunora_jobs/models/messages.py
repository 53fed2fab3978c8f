"""Chat messages in the OpenAI shape, which every ``Model`` takes: build, read and normalize them.

Example::

    turn = ModelTurn(tool_calls=[ToolCall("call_1", "get_weather", {"city": "Berlin"})])
    assistant_message(turn)
    # {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
    #   "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Berlin\\"}"}}]}
    tool_message("call_1", {"temp_c": 21})   # {"role": "tool", "tool_call_id": "call_1", "content": "{...}"}
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from lunora_jobs.models.base import ModelTurn, ToolCall

SUMMARY_INSTRUCTIONS = (
    "You compress conversation history. Summarize the transcript below into a brief for an assistant that "
    "will continue the conversation: keep facts, names, numbers, decisions, open questions and tool results "
    "that may matter later. Write plain prose, at most 200 words."
)
"""The system prompt of a compaction request (``models.compaction.summary_request``)."""

COMPACTION_MARKER = "[compacted history: {messages} messages, {turns} assistant turns]"
_MARKER = re.compile(r"^\[compacted history: (\d+) messages, (\d+) assistant turns\]")


def message_text(message: dict[str, Any]) -> str:
    """The text of a message, whether ``content`` is a string or a list of content parts."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content)


def assistant_message(turn: ModelTurn) -> dict[str, Any]:
    """The assistant message a turn adds to the thread (tool calls in OpenAI's wire shape)."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.tool_calls:
        message["tool_calls"] = [_wire_call(call) for call in turn.tool_calls]
    return message


def tool_message(tool_call_id: str, output: Any) -> dict[str, Any]:
    """A tool result message; non-string outputs are JSON-encoded (``default=str`` for odd types)."""
    content = output if isinstance(output, str) else json.dumps(output, default=str, ensure_ascii=False)
    return {"role": "tool", "tool_call_id": tool_call_id, "content": content}


def to_wire_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Normalize messages for a chat-completions request.

    Tool calls given as ``{"id", "name", "arguments": dict}`` (``ToolCall.to_json`` shape) become the
    wire shape; keys a provider would reject (anything but role/content/name/tool_calls/tool_call_id)
    are dropped, so the engine may carry bookkeeping fields on its messages.
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        out = {
            k: v for k, v in message.items() if k in ("role", "content", "name", "tool_calls", "tool_call_id")
        }
        if out.get("tool_calls"):
            out["tool_calls"] = [
                call if "function" in call else _wire_call(ToolCall.from_json(call))
                for call in out["tool_calls"]
            ]
        elif "tool_calls" in out:
            del out["tool_calls"]  # an empty list is rejected by some servers
        if out.get("role") == "tool" and not isinstance(out.get("content"), str):
            out["content"] = json.dumps(out.get("content"), default=str)
        wire.append(out)
    return wire


def count_assistant_turns(messages: Sequence[dict[str, Any]]) -> int:
    """How many assistant turns a prompt holds, including those folded into a compaction brief.

    Stateless models (``ScriptedModel``, ``OfflineModel``) use it to know where they are in a run.
    """
    count = 0
    for message in messages:
        if message.get("role") == "assistant":
            count += 1
        elif message.get("role") == "system":
            marker = _MARKER.match(message_text(message))
            if marker:
                count += int(marker.group(2))
    return count


def brief_marker(older: Sequence[dict[str, Any]]) -> str:
    """The first line of a compaction brief: how much history it stands for."""
    messages = sum(_brief_size(m) for m in older)
    return COMPACTION_MARKER.format(messages=messages, turns=count_assistant_turns(older))


def _brief_size(message: dict[str, Any]) -> int:
    marker = _MARKER.match(message_text(message)) if message.get("role") == "system" else None
    return int(marker.group(1)) if marker else 1


def _wire_call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
    }
