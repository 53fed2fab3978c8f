"""History compaction: fold older messages into one system brief before a turn.

The engine calls ``compact`` inside the turn's memoized step, so the summary is paid for once and a
replay reuses the stored turn. Leading system messages (the agent's instructions) are kept as they are;
``max_messages`` counts the rest.

Example::

    messages, usage = compact(prompt, CompactionOptions(max_messages=6), summarizer)
    # [system instructions, {"role": "system", "content": "[compacted history: ...]\\n<summary>"}, *recent 3]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lunora_jobs.loop import CompactionOptions
from lunora_jobs.models.base import Model, Usage
from lunora_jobs.models.messages import SUMMARY_INSTRUCTIONS, brief_marker, message_text


def needs_compaction(messages: Sequence[dict[str, Any]], options: CompactionOptions | None) -> bool:
    """True when the history (after leading system messages) exceeds ``options.max_messages``."""
    if options is None:
        return False
    _, history = _split_system(messages)
    return len(history) > options.max_messages


def split_for_compaction(
    history: Sequence[dict[str, Any]], keep_recent: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(older, recent)`` with ``recent`` = the last ``keep_recent`` messages, moved back so the tail never
    starts with tool results cut off from the assistant message that called them (providers reject that)."""
    cut = max(len(history) - keep_recent, 0)
    while 0 < cut < len(history) and history[cut].get("role") == "tool":
        cut -= 1
    return list(history[:cut]), list(history[cut:])


def summary_request(older: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The prompt sent to the summarizing model: instructions + the older messages as a transcript.

    The transcript is one user message (no assistant messages), so no provider sees dangling tool calls.
    """
    lines = []
    for message in older:
        role = message.get("role", "user")
        text = message_text(message)
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or call
            text += f"\n(called {fn.get('name')} with {fn.get('arguments')})"
        lines.append(f"{role}: {text.strip()}")
    return [
        {"role": "system", "content": SUMMARY_INSTRUCTIONS},
        {"role": "user", "content": "Transcript:\n" + "\n".join(lines)},
    ]


def compact(
    messages: Sequence[dict[str, Any]], options: CompactionOptions, model: Model
) -> tuple[list[dict[str, Any]], Usage]:
    """Return the compacted prompt and the summarizer's usage (zero when nothing needed compacting)."""
    if not needs_compaction(messages, options):
        return list(messages), Usage()
    system, history = _split_system(messages)
    older, recent = split_for_compaction(history, options.recent)
    if not older:
        return list(messages), Usage()
    turn = model.generate(summary_request(older))
    brief = {"role": "system", "content": f"{brief_marker(older)}\n{(turn.text or '').strip()}"}
    return [*system, brief, *recent], turn.usage


def _split_system(messages: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    lead = 0
    while lead < len(messages) and messages[lead].get("role") == "system" and not _is_brief(messages[lead]):
        lead += 1
    return list(messages[:lead]), list(messages[lead:])


def _is_brief(message: dict[str, Any]) -> bool:
    return message_text(message).startswith("[compacted history:")
