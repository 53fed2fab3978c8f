"""Anthropic Messages wire format: OpenAI-shaped messages → a Messages request; a ``Message`` → ``ModelTurn``.

The seam speaks OpenAI's chat shape; this module translates it:

- system messages go to the top-level ``system`` (in order, joined by a blank line);
- an assistant message's ``tool_calls`` become ``tool_use`` blocks, ``role: tool`` messages become
  ``tool_result`` blocks of a user message; consecutive messages of one role are merged, as the API
  wants every tool result of a turn in the one user message after it;
- ``tool_choice`` "required" is ``{"type": "any"}``, a named tool ``{"type": "tool", "name"}``;
- an output schema is the API's structured output (``output_config.format`` = ``json_schema``), so the
  answer's text is the JSON, as on chat completions;
- usage: Anthropic counts cache reads and writes apart from ``input_tokens``; here they are subsets of
  the input, so ``input_tokens`` = uncached + cache read + cache write.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lunora_jobs.errors import ConfigurationError
from lunora_jobs.models.base import ModelTurn, ToolCall, ToolChoice, ToolSpec, Usage
from lunora_jobs.models.messages import message_text

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


def request_params(
    model: str,
    max_tokens: int,
    messages: Sequence[dict[str, Any]],
    *,
    tools: Sequence[ToolSpec] = (),
    tool_choice: ToolChoice = "auto",
    output_schema: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` for one turn."""
    system = [message_text(m) for m in messages if m.get("role") == "system"]
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": to_anthropic_messages(messages),
    }
    if any(system):
        params["system"] = "\n\n".join(s for s in system if s)
    if tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
        ]
        params["tool_choice"] = _tool_choice(tool_choice)
    if output_schema is not None:
        params["output_config"] = {"format": {"type": "json_schema", "schema": output_schema}}
    return params


def to_anthropic_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The non-system messages as Messages API turns (content blocks, roles alternating)."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "tool":
            blocks = [_tool_result(message)]
            role = "user"
        elif role == "assistant":
            blocks = _assistant_blocks(message)
        else:
            role = "user"
            blocks = _user_blocks(message.get("content"))
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def parse_message(message: Any, *, default_model: str | None = None) -> ModelTurn:
    """Turn a Messages API ``Message`` into a ``ModelTurn`` (text blocks joined, tool_use → tool calls)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else {}
            raw = None if isinstance(block.input, dict) else json.dumps(block.input)
            calls.append(ToolCall(id=block.id, name=block.name, arguments=arguments, raw_arguments=raw))
    stop = getattr(message, "stop_reason", None)
    finish = _FINISH.get(str(stop), "other") if stop is not None else "other"
    if calls and finish == "stop":
        finish = "tool_calls"
    return ModelTurn(
        text="".join(texts) if texts else None,
        tool_calls=calls,
        usage=usage_of(getattr(message, "usage", None)),
        finish_reason=finish,
        model=getattr(message, "model", None) or default_model,
    )


def usage_of(usage: Any) -> Usage:
    """Anthropic usage → ``Usage`` (cache reads and writes folded into the input count)."""
    if usage is None:
        return Usage()
    read = int(getattr(usage, "cache_read_input_tokens", None) or 0)
    write = int(getattr(usage, "cache_creation_input_tokens", None) or 0)
    return Usage(
        input_tokens=int(getattr(usage, "input_tokens", None) or 0) + read + write,
        output_tokens=int(getattr(usage, "output_tokens", None) or 0),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def _tool_choice(choice: ToolChoice) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    if isinstance(choice, dict):
        name = choice.get("name") or choice.get("tool_name") or (choice.get("function") or {}).get("name")
        if name:
            return {"type": "tool", "name": name}
    raise ConfigurationError(
        f"tool_choice {choice!r} is not understood; use 'auto', 'none', 'required' or "
        "{'type': 'tool', 'name': '...'}."
    )


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else [content]:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "image_url":
            image = part["image_url"]
            blocks.append(_image(image["url"] if isinstance(image, dict) else str(image)))
        elif kind in ("image", "document"):  # already in Anthropic's own shape
            blocks.append(part)
        else:
            raise ConfigurationError(
                f"A message part of type {kind!r} cannot be sent to Anthropic; use text or image_url parts."
            )
    return blocks


def _image(url: str) -> dict[str, Any]:
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        media_type = header[len("data:") :].split(";", 1)[0]
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = message_text(message)
    if text:
        blocks.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or []:
        function = call.get("function")
        if function is not None:  # the chat-completions wire shape
            name, raw = function.get("name"), function.get("arguments") or "{}"
            try:
                arguments = json.loads(raw) if isinstance(raw, str) else raw
            except json.JSONDecodeError:
                arguments = {}
        else:  # ToolCall.to_json shape
            name, arguments = call.get("name"), call.get("arguments") or {}
        blocks.append({"type": "tool_use", "id": call["id"], "name": name, "input": arguments})
    return blocks


def _tool_result(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content, default=str, ensure_ascii=False)
    return {"type": "tool_result", "tool_use_id": message.get("tool_call_id"), "content": text}
