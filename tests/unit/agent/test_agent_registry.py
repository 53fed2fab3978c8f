"""The "provider:model" registry."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError, UnknownModelProviderError
from lunora_jobs.models import registry
from lunora_jobs.models.offline import OfflineModel
from lunora_jobs.models.openai import OpenAIModel
from lunora_jobs.models.registry import register_model_provider, registered_providers, resolve_model
from lunora_jobs.models.scripted import ScriptedModel, final_turn


@pytest.fixture
def restore_registry() -> Iterator[None]:
    saved = dict(registry._providers)
    yield
    registry._providers.clear()
    registry._providers.update(saved)


def no_openai() -> Settings:
    return Settings(openai_api_key=None, openai_base_url=None)


def test_builtin_providers() -> None:
    assert {"openai", "anthropic", "offline", "auto"} <= set(registered_providers())
    offline = resolve_model("offline", no_openai())
    assert isinstance(offline, OfflineModel) and offline.name == "offline"
    assert resolve_model("offline:small", no_openai()).name == "offline:small"


def test_openai_strings_take_key_and_base_url_from_settings() -> None:
    settings = Settings(openai_api_key="sk-test", openai_base_url="http://127.0.0.1:9/v1")
    model = resolve_model("openai:gpt-4o-mini", settings)
    assert isinstance(model, OpenAIModel)
    assert model.model == "gpt-4o-mini" and model.name == "openai:gpt-4o-mini"
    assert str(model.client.base_url).startswith("http://127.0.0.1:9/v1")
    assert model.client.api_key == "sk-test"


def test_auto_picks_openai_only_when_configured() -> None:
    assert isinstance(resolve_model("auto", no_openai()), OfflineModel)
    local = resolve_model(
        "auto:llama3", Settings(openai_api_key=None, openai_base_url="http://127.0.0.1:9/v1")
    )
    assert isinstance(local, OpenAIModel) and local.model == "llama3"
    assert local.client.api_key == "not-needed"  # a local server needs no key


def test_openai_without_key_or_base_url_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = resolve_model("openai:gpt-4o-mini", no_openai())  # resolving needs no key ...
    assert isinstance(model, OpenAIModel)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        _ = model.client  # ... calling does


def test_models_and_callables() -> None:
    scripted = ScriptedModel([final_turn("x")])
    assert resolve_model(scripted, no_openai()) is scripted
    seen: list[Settings] = []

    def factory(settings: Settings) -> ScriptedModel:
        seen.append(settings)
        return scripted

    settings = no_openai()
    assert resolve_model(factory, settings) is scripted and seen == [settings]
    with pytest.raises(ConfigurationError, match="return a Model"):
        resolve_model(lambda s: "not a model", settings)  # type: ignore[arg-type,return-value]


def test_unknown_provider_lists_the_registered_ones() -> None:
    with pytest.raises(UnknownModelProviderError) as info:
        resolve_model("mistral:large", no_openai())
    assert "mistral" in str(info.value) and "offline" in str(info.value) and "openai" in str(info.value)
    assert "anthropic" in str(info.value)  # listed among the registered providers
    assert isinstance(info.value, LookupError) and isinstance(info.value, ConfigurationError)


def test_users_can_register_providers(restore_registry: None) -> None:
    built: list[tuple[str, Settings]] = []

    def echo(name: str, settings: Settings) -> ScriptedModel:
        built.append((name, settings))
        return ScriptedModel([final_turn(name)], name=f"echo:{name}")

    register_model_provider("echo", echo)
    assert "echo" in registered_providers()
    model = resolve_model("echo:loud", no_openai())
    assert model.name == "echo:loud" and built[0][0] == "loud"
    with pytest.raises(ConfigurationError):
        register_model_provider("bad:prefix", echo)
    with pytest.raises(ConfigurationError):
        register_model_provider("x", "not callable")  # type: ignore[arg-type]
