"""``OpenAIModel``: any OpenAI-compatible chat-completions endpoint, through the ``openai`` SDK.

Set ``OPENAI_BASE_URL`` (or ``base_url=``) to talk to vLLM, Ollama, a llama.cpp server or OpenRouter;
a local server needs no key. Retries (2, with backoff) and timeouts are the SDK's.

Example::

    model = OpenAIModel("gpt-4o-mini")                                    # OPENAI_API_KEY from the env
    local = OpenAIModel("llama3.1", base_url="http://127.0.0.1:11434/v1")  # Ollama
    turn = model.generate([{"role": "user", "content": "Hi"}], tools=[weather.spec()])
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import openai

from lunora_jobs.errors import ConfigurationError
from lunora_jobs.models.base import ModelTurn, ToolCall, ToolChoice, ToolSpec, Usage
from lunora_jobs.models.messages import to_wire_messages

DEFAULT_TIMEOUT_S = 60.0
"""Per attempt. Three attempts plus backoff stay under the default 300 s step lease, so a slow provider
cannot outlive the lease and get the same turn paid for twice by a second worker."""
_FINISH = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


class OpenAIModel:
    """A ``Model`` on chat completions: tools, tool choice, JSON-schema output, usage with cached tokens."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: openai.OpenAI | None = None,
        name: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = 2,
    ) -> None:
        self.model = model
        self.name = name or f"openai:{model}"
        self._client = client
        self._api_key = api_key
        self._base_url = base_url
        self._timeout = timeout
        self._max_retries = max_retries

    @property
    def client(self) -> openai.OpenAI:
        """The SDK client, built on first use (so declaring an agent needs no key)."""
        if self._client is None:
            base_url = self._base_url or os.environ.get("OPENAI_BASE_URL") or None
            api_key = self._api_key or os.environ.get("OPENAI_API_KEY")
            if not api_key:
                if not base_url:
                    raise ConfigurationError(
                        "OpenAIModel needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local server "
                        "such as vLLM, "
                        "Ollama or llama.cpp); set one, or use model='offline'."
                    )
                api_key = "not-needed"  # local OpenAI-compatible servers ignore the key
            self._client = openai.OpenAI(
                api_key=api_key, base_url=base_url, timeout=self._timeout, max_retries=self._max_retries
            )
        return self._client

    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        """One chat-completions call; see ``request_params`` for the mapping."""
        params = self.request_params(
            messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema
        )
        response = self.client.chat.completions.create(**params)
        return parse_completion(response, default_model=self.model)

    def request_params(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for one turn."""
        params: dict[str, Any] = {"model": self.model, "messages": to_wire_messages(messages)}
        if tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in tools
            ]
            params["tool_choice"] = _wire_tool_choice(tool_choice)
        if output_schema is not None:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": output_schema, "strict": False},
            }
        return params

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model!r}, name={self.name!r})"


def _wire_tool_choice(choice: ToolChoice) -> Any:
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
