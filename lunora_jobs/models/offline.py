"""``OfflineModel``: the deterministic model a fresh machine runs with, labelled as such in every answer.

No network, no randomness, no clock: the same prompt always gives the same turn. It streams too, word
by word (``stream`` / ``astream``), so token streaming can be tried without a provider. When tools are offered
and the user just spoke, it calls the tool whose name and description share the most words with the
user's text, filling arguments from the schema (a capitalized word for a "city"-like field, numbers
found in the text, the whole text for a query). After tool results it answers by summarizing them. With
an output schema it answers with JSON that validates.

Example::

    turn = OfflineModel().generate([{"role": "user", "content": "What's the weather in Berlin?"}],
                                   tools=[weather.spec()])
    turn.tool_calls[0].arguments   # {"city": "Berlin"}
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from lunora_jobs.models.base import ModelTurn, ToolCall, ToolChoice, ToolSpec, Usage
from lunora_jobs.models.messages import SUMMARY_INSTRUCTIONS, count_assistant_turns, message_text
from lunora_jobs.models.offline_values import fill_schema, words
from lunora_jobs.models.streaming import StreamEvent, turn_events

LABEL = "[offline model]"


class OfflineModel:
    """The offline default model (``"offline"`` in the registry)."""

    def __init__(self, *, name: str = "offline") -> None:
        self.name = name

    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        """Take one deterministic turn (see the module docstring for the rules)."""
        usage = Usage(input_tokens=_estimate_tokens(messages))
        last = messages[-1] if messages else {"role": "user", "content": ""}
        user_text = _last_user_text(messages)
        if tools and tool_choice != "none" and last.get("role") == "user":
            chosen = _choose_tool(user_text, tools, tool_choice)
            if chosen is not None:
                call_id = f"offline_{count_assistant_turns(messages)}_0"
                args = fill_schema(chosen.parameters, user_text, field_name=None)
                call = ToolCall(
                    id=call_id, name=chosen.name, arguments=args if isinstance(args, dict) else {}
                )
                return self._turn(None, [call], usage, "tool_calls")
        if messages and message_text(messages[0]) == SUMMARY_INSTRUCTIONS:  # a compaction request
            transcript = user_text.removeprefix("Transcript:").strip()
            text = f"{LABEL} Summary of the earlier conversation: {_clip(transcript, 600)}"
        elif last.get("role") == "tool":
            summary = _summarize_tool_results(messages)
            text = f"{LABEL} Based on the tool results: {summary}"
        else:
            text = (
                f"{LABEL} You said: {_clip(user_text, 300)!r}. (No language model is configured; "
                "set OPENAI_API_KEY or OPENAI_BASE_URL for real answers.)"
            )
        if output_schema is not None:
            text = json.dumps(fill_schema(output_schema, text, field_name=None), ensure_ascii=False)
        return self._turn(text, [], usage, "stop")

    def stream(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        """The same turn as ``generate``, its text streamed word by word."""
        turn = self.generate(messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema)
        yield from turn_events(turn, by_word=True)

    async def astream(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """``stream`` for an event loop (nothing here blocks)."""
        for event in self.stream(messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema):
            yield event

    def _turn(self, text: str | None, calls: list[ToolCall], usage: Usage, finish: str) -> ModelTurn:
        output_tokens = len(words(text or "")) + sum(len(json.dumps(c.arguments)) // 4 for c in calls)
        return ModelTurn(
            text=text,
            tool_calls=calls,
            finish_reason=finish,
            model=self.name,
            usage=Usage(input_tokens=usage.input_tokens, output_tokens=max(output_tokens, 1)),
        )

    def __repr__(self) -> str:
        return f"OfflineModel(name={self.name!r})"


def _choose_tool(text: str, tools: Sequence[ToolSpec], tool_choice: ToolChoice) -> ToolSpec | None:
    if isinstance(tool_choice, dict):
        wanted = tool_choice.get("name") or (tool_choice.get("function") or {}).get("name")
        return next((t for t in tools if t.name == wanted), None)
    asked = {_stem(w) for w in words(text)}
    best, best_score = tools[0], 0
    for spec in tools:  # ties keep the earlier tool: declaration order is deterministic
        offered = {_stem(w) for w in words(spec.name.replace("_", " ") + " " + spec.description)}
        score = len(asked & offered)
        if score > best_score:
            best, best_score = spec, score
    return best if best_score > 0 or tool_choice == "required" else None


_STOP = {
    "the",
    "a",
    "an",
    "in",
    "of",
    "to",
    "for",
    "is",
    "what",
    "whats",
    "s",
    "and",
    "on",
    "at",
    "my",
    "me",
    "i",
}


def _stem(word: str) -> str:
    word = word.lower()
    if word in _STOP:
        return ""
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _last_user_text(messages: Sequence[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return message_text(message)
    return ""


def _summarize_tool_results(messages: Sequence[dict[str, Any]]) -> str:
    names: dict[str, str] = {}
    results: list[str] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call.get("id", "")] = (call.get("function") or call).get("name", "tool")
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        name = names.get(message.get("tool_call_id", ""), "tool")
        results.append(f"{name} returned {_clip(message_text(message), 200)}")
    return "; ".join(reversed(results)) + "."


def _estimate_tokens(messages: Sequence[dict[str, Any]]) -> int:
    # ~4 characters a token: good enough for usage accounting without a tokenizer.
    return sum(len(message_text(m)) // 4 + 4 for m in messages)


def _clip(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
