"""What every helper does first: resolve the model through the registry and build the prompt messages."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.models.base import Model
from lunora_jobs.models.registry import resolve_model

ModelOption = str | Model | Callable[[Settings], Model]
"""``"provider:model"`` (the registry agents use), a ``Model`` object, or ``callable(settings) -> Model``."""

_CACHE_SIZE = 32
_cache: OrderedDict[tuple[str, str], Model] = OrderedDict()
_lock = threading.Lock()


def resolve(model: ModelOption, settings: Settings | None) -> Model:
    """The ``Model`` for a helper call. A string resolves once per (string, settings) and is reused, so
    repeated calls share one SDK client (and its connection pool) instead of building one per call."""
    settings = settings if settings is not None else Settings()
    if not isinstance(model, str):
        return resolve_model(model, settings)
    key = (model, settings.model_dump_json())
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    built = resolve_model(model, settings)
    with _lock:
        _cache[key] = built
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return built


def prompt_messages(
    prompt: str | None, system: str | None, messages: Sequence[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """``[system?, user prompt]`` or ``[system?, *messages]``; exactly one of prompt and messages."""
    if (prompt is None) == (messages is None):
        raise ConfigurationError(
            "Pass exactly one of prompt='...' (one user message) or messages=[...] (a conversation)."
        )
    head = [{"role": "system", "content": system}] if system else []
    if prompt is not None:
        if not isinstance(prompt, str):
            raise ConfigurationError(f"prompt must be a string, got {type(prompt).__name__}.")
        return [*head, {"role": "user", "content": prompt}]
    assert messages is not None
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message:
            raise ConfigurationError(
                f"messages[{i}] must be a dict with a 'role' (OpenAI chat shape), got {message!r:.80}."
            )
    return [*head, *messages]
