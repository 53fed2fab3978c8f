"""``"provider:model"`` strings → ``Model`` objects, through a registry users can extend.

Built in: ``openai:<model>`` (key and base URL from Settings: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, so
vLLM / Ollama / llama.cpp server / OpenRouter work too), ``anthropic:<model>`` (Anthropic's Messages API
through its SDK, the ``anthropic`` extra; ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``),
``offline`` / ``offline:<label>`` (the
deterministic offline model) and ``auto`` / ``auto:<model>`` (``openai:<model>`` when an OpenAI key or
base URL is configured, else offline).

Example::

    register_model_provider("echo", lambda name, settings: EchoModel(name))
    model = resolve_model("echo:loud", Settings())
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError, ProviderUnavailableError, UnknownModelProviderError
from lunora_jobs.models.base import Model

ModelFactory = Callable[[str, Settings], Model]
"""``factory(model_name, settings)``: ``model_name`` is the part after the first colon ("" if none)."""

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"

_providers: dict[str, ModelFactory] = {}


def register_model_provider(prefix: str, factory: ModelFactory) -> None:
    """Make ``"<prefix>:<model>"`` (and bare ``"<prefix>"``) resolve through ``factory``.

    Registering a prefix again replaces the earlier factory.
    """
    if not prefix or ":" in prefix:
        raise ConfigurationError(f"Model provider prefix {prefix!r} must be non-empty and contain no ':'.")
    if not callable(factory):
        raise ConfigurationError(
            f"Model provider {prefix!r}: factory must be callable(model_name, settings)."
        )
    _providers[prefix] = factory


def registered_providers() -> list[str]:
    """The registered provider prefixes, sorted."""
    return sorted(_providers)


def split_model_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o"`` → ``("openai", "gpt-4o")``; raise ``UnknownModelProviderError`` if unregistered."""
    provider, _, name = spec.partition(":")
    if provider not in _providers:
        hint = f" Did you mean 'openai:{spec}'?" if ":" not in spec else ""
        raise UnknownModelProviderError(
            f"Unknown model provider {provider!r} in {spec!r}. Registered providers: "
            f"{', '.join(registered_providers())}.{hint} "
            "Add one with register_model_provider(prefix, factory)."
        )
    return provider, name


def check_model_spec(spec: Any) -> None:
    """Declaration-time check of a model option, without building a client (no key needed yet)."""
    if isinstance(spec, str):
        split_model_spec(spec)
    elif not (isinstance(spec, Model) or callable(spec)):
        raise ConfigurationError(
            f"model must be a 'provider:model' string, a Model, or a callable(settings) -> Model; "
            f"got {type(spec).__name__}."
        )


def resolve_model(spec: str | Model | Callable[[Settings], Model], settings: Settings | None = None) -> Model:
    """Turn a model option into a ``Model``: strings via the registry, Models pass through,
    callables are called with the settings."""
    settings = settings if settings is not None else Settings()
    if isinstance(spec, str):
        provider, name = split_model_spec(spec)
        return _providers[provider](name, settings)
    if isinstance(spec, Model):
        return spec
    if callable(spec):
        model = spec(settings)
        if not isinstance(model, Model):
            raise ConfigurationError(
                f"The model callable returned {type(model).__name__}, which has no generate(); "
                "return a Model."
            )
        return model
    raise ConfigurationError(
        f"Cannot resolve a model from {type(spec).__name__}; pass 'openai:<model>' or a Model."
    )


def _openai(name: str, settings: Settings) -> Model:
    from lunora_jobs.models.openai import OpenAIModel  # the openai SDK is an optional extra

    return OpenAIModel(
        name or DEFAULT_OPENAI_MODEL, api_key=settings.openai_api_key, base_url=settings.openai_base_url
    )


def _anthropic(name: str, settings: Settings) -> Model:
    if not name:
        raise ConfigurationError(
            "Name the Claude model: 'anthropic:<model>', e.g. 'anthropic:claude-sonnet-4-5'."
        )
    try:
        from lunora_jobs.models.anthropic import AnthropicModel  # the anthropic SDK is an optional extra
    except ImportError as exc:
        raise ProviderUnavailableError(
            f"'anthropic:{name}' needs the anthropic SDK: pip install \"lunora-jobs[anthropic]\"."
        ) from exc
    return AnthropicModel(name, api_key=settings.anthropic_api_key, base_url=settings.anthropic_base_url)


def _offline(name: str, settings: Settings) -> Model:
    from lunora_jobs.models.offline import OfflineModel

    return OfflineModel(name=f"offline:{name}" if name else "offline")


def _auto(name: str, settings: Settings) -> Model:
    if settings.openai_api_key or settings.openai_base_url:
        return _openai(name, settings)
    return _offline("", settings)


register_model_provider("openai", _openai)
register_model_provider("anthropic", _anthropic)
register_model_provider("offline", _offline)
register_model_provider("auto", _auto)
