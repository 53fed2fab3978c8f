"""Chat-completions wire format: a turn's request pieces and a ``ChatCompletion`` → ``ModelTurn``."""

from __future__ import annotations

import json
from typing import Any

from lunora_jobs.errors import ConfigurationError
from lunora_jobs.models.base import ModelTurn, ToolCall, ToolChoice, Usage

_FINISH = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


def wire_tool_choice(choice: ToolChoice) -> Any:
    """A ``ToolChoice`` in chat-completions terms (``{"type": "tool", "name"}`` names one function)."""
    if isinstance(choice, str):
        return choice
    if choice.get("type") == "function" and "function" in choice:
        return choice
    name = choice.get("name") or choice.get("tool_name")
    if not name:
        raise ConfigurationError(
            f"tool_choice {choice!r} names no tool; use {{'type': 'tool', 'name': '...'}}."
        )
    return {"type": "function", "function": {"name": name}}


def parse_completion(response: Any, *, default_model: str | None = None) -> ModelTurn:
    """Turn a ``ChatCompletion`` into a ``ModelTurn`` (invalid tool-call JSON keeps ``raw_arguments``)."""
    choice = response.choices[0] if response.choices else None
    message = choice.message if choice is not None else None
    calls: list[ToolCall] = []
    for call in (message.tool_calls if message is not None else None) or []:
        function = getattr(call, "function", None)
        if function is None:  # custom (non-function) tools are not offered by us
            continue
        raw = function.arguments or ""
        try:
            arguments = json.loads(raw) if raw.strip() else {}
            calls.append(
                ToolCall(id=call.id, name=function.name, arguments=arguments)
                if isinstance(arguments, dict)
                else ToolCall(id=call.id, name=function.name, arguments={}, raw_arguments=raw)
            )
        except json.JSONDecodeError:
            calls.append(ToolCall(id=call.id, name=function.name, arguments={}, raw_arguments=raw))
    finish = _FINISH.get(str(choice.finish_reason), "other") if choice is not None else "error"
    if calls and finish == "stop":  # some servers (Ollama, llama.cpp) report "stop" alongside tool calls
        finish = "tool_calls"
    text = message.content if message is not None else None
    refusal = getattr(message, "refusal", None)
    if text is None and refusal:  # a safety refusal: surface its text so the thread shows why
        text, finish = refusal, "content_filter"
    return ModelTurn(
        text=text,
        tool_calls=calls,
        usage=_usage(getattr(response, "usage", None)),
        finish_reason=finish,
        model=getattr(response, "model", None) or default_model,
    )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    extra = getattr(usage, "model_extra", None) or {}
    cost = extra.get("cost")  # OpenRouter reports the billed cost; it wins over any estimate
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=int(cached),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )
