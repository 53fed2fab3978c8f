"""The Lunora app object: embedded defaults, env wiring, load_app, and no static Celery import."""

from __future__ import annotations

import subprocess
import sys

import pytest
import runtime_support

from lunora_jobs import ConfigurationError, InProcessDispatcher, LocalLock, Lunora, RedisLock, define_agent
from lunora_jobs.runtime import load_app
from lunora_jobs.store import SqlStore


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> pytest.MonkeyPatch:
    for name in (
        "LUNORA_DATABASE_URL",
        "CELERY_BROKER_URL",
        "LUNORA_REDIS_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "LUNORA_APP",
        "LUNORA_DISPATCHER",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LUNORA_DATA_DIR", f"{tmp_path}/data")
    return monkeypatch


def test_from_env_on_a_fresh_machine_is_sqlite_inprocess_local_offline(clean_env: pytest.MonkeyPatch) -> None:
    app = Lunora.from_env(agents=[runtime_support.echo])
    assert isinstance(app.store, SqlStore) and app.store.engine.dialect.name == "sqlite"
    assert isinstance(app.dispatcher, InProcessDispatcher) and isinstance(app.lock, LocalLock)
    handle = app.agents.echo.run(input="hello there", thread_key="t", owner="u1")
    result = app.agents.echo.wait(handle.id, timeout=10)
    assert (result.status, result.stopped, result.turns) == ("completed", "final", 1)
    assert result.text is not None and result.text.startswith("[offline model]")
    assert app.agents.echo.status(handle.id) == "completed"
    assert app.agents["echo"].result(handle.id) == result
    assert [m.role for m in app.threads.messages("t", viewer="u1")] == ["user", "assistant"]
    app.close()


def test_env_broker_loads_the_named_dispatcher_and_redis_the_lock(
    clean_env: pytest.MonkeyPatch, sqlite_url: str, redis_url: str, redis_prefix: str
) -> None:
    clean_env.setenv("LUNORA_DATABASE_URL", sqlite_url)
    clean_env.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    clean_env.setenv("LUNORA_REDIS_URL", redis_url)
    clean_env.setenv("LUNORA_DISPATCHER", "runtime_support:NamedDispatcher")
    app = Lunora.from_env(agents=[runtime_support.echo], redis_prefix=redis_prefix)
    assert isinstance(app.dispatcher, runtime_support.NamedDispatcher)
    assert app.dispatcher.broker_url == "redis://127.0.0.1:6379/0"
    assert isinstance(app.lock, RedisLock) and app.lock.prefix == redis_prefix
    handle = app.agents.echo.run(input="queued", thread_key="q")
    assert [t.step for t in app.dispatcher.tasks] == ["llm:turn:0"]
    assert app.agents.echo.status(handle.id) == "running"
    # What a worker does with the message:
    assert app.execute_step(handle.id, "llm:turn:0").status == "completed"
    assert app.agents.echo.wait(handle.id, timeout=5).stopped == "final"
    app.close()


def test_load_app_reads_lunora_app(clean_env: pytest.MonkeyPatch) -> None:
    assert load_app("runtime_support:app") is runtime_support.app
    assert isinstance(load_app("runtime_support:make_app"), Lunora)
    clean_env.setenv("LUNORA_APP", "runtime_support:app")
    assert load_app() is runtime_support.app
    clean_env.delenv("LUNORA_APP")
    with pytest.raises(ConfigurationError, match="LUNORA_APP is not set"):
        load_app()
    with pytest.raises(ConfigurationError, match="not a Lunora app"):
        load_app("runtime_support:echo")
    with pytest.raises(ConfigurationError, match="cannot import"):
        load_app("no_such_module_xyz:app")


def test_agent_names_must_be_unique_and_unknown_agents_are_named() -> None:
    from lunora_jobs.store import InMemoryStore

    twin = define_agent(name="echo", model="offline")
    with pytest.raises(ConfigurationError, match="two agents are named 'echo'"):
        Lunora([runtime_support.echo, twin], store=InMemoryStore())
    app = Lunora([runtime_support.echo], store=InMemoryStore())
    with pytest.raises(AttributeError, match="registered: echo"):
        _ = app.agents.support


def test_lunora_jobs_never_imports_celery() -> None:
    code = (
        "import sys, lunora_jobs, lunora_jobs.runtime, lunora_jobs.testing, lunora_jobs.example, "
        "lunora_jobs.engine.pipeline, lunora_jobs.engine.sweep\n"
        "assert 'celery' not in sys.modules and 'kombu' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
