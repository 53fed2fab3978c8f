"""Production is never silently a demo: a worker outside the embedded default refuses to start when an
agent would fall back to the offline model (or has no key at all), unless that is opted into, loudly."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
from image_support import wait_for

from lunora_jobs.agent import define_agent
from lunora_jobs.config import Settings
from lunora_jobs.errors import MissingDatabaseUrlError, MissingModelKeyError
from lunora_jobs.models.scripted import ScriptedModel, final_turn
from lunora_jobs.runtime import Lunora
from lunora_jobs.store.memory import InMemoryStore
from workers.preflight import EX_CONFIG, check_production_settings
from workers.testing import WorkerProcess

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REDIS_BASE = os.environ.get("LUNORA_TEST_REDIS_BASE", "redis://127.0.0.1:6379")
PRODUCTION = {"broker_url": "redis://redis:6379/0", "database_url": "postgresql://db/lunora"}


def _app(*models: Any) -> Lunora:
    agents = [define_agent(name=f"a{i}", instructions="i", model=m) for i, m in enumerate(models)]
    return Lunora(agents, store=InMemoryStore())


def test_the_embedded_default_runs_the_offline_model_without_a_word() -> None:
    assert check_production_settings(_app("auto"), Settings(openai_api_key="")) == []


@pytest.mark.parametrize("key", [None, ""])  # "" is what an empty helm value gives
def test_auto_without_a_key_is_an_error_outside_the_embedded_default(key: str | None) -> None:
    settings = Settings(**PRODUCTION, openai_api_key=key)
    with pytest.raises(MissingModelKeyError, match=r"a0 \(model 'auto'\) would run the deterministic"):
        check_production_settings(_app("auto"), settings)
    with pytest.raises(MissingModelKeyError, match="LUNORA_ALLOW_OFFLINE_MODEL=true"):
        check_production_settings(_app("auto:gpt-4o"), Settings(database_url="postgresql://db/x"))


def test_the_opt_in_runs_the_offline_model_and_names_the_agents() -> None:
    settings = Settings(**PRODUCTION, allow_offline_model=True)
    assert check_production_settings(_app("auto", "offline"), settings) == ["a0 (model 'auto')"]


def test_a_provider_without_its_key_is_an_error_even_with_the_opt_in() -> None:
    settings = Settings(**PRODUCTION, allow_offline_model=True)
    with pytest.raises(MissingModelKeyError, match=r"a0 \(model 'openai:gpt-4o-mini'\) needs OPENAI_API_KEY"):
        check_production_settings(_app("openai:gpt-4o-mini"), settings)


def test_a_key_a_base_url_or_an_explicit_model_passes() -> None:
    scripted = ScriptedModel([final_turn("x")])
    keyed = Settings(**PRODUCTION, openai_api_key="sk")
    assert check_production_settings(_app("auto", "openai:x"), keyed) == []
    local = Settings(**PRODUCTION, openai_base_url="http://vllm:8000/v1")
    assert check_production_settings(_app("auto"), local) == []
    assert check_production_settings(_app(scripted, "offline"), Settings(**PRODUCTION)) == []


def test_a_broker_without_a_database_is_an_error() -> None:
    with pytest.raises(MissingDatabaseUrlError, match="LUNORA_DATABASE_URL"):
        check_production_settings(_app(ScriptedModel([])), Settings(broker_url="redis://redis:6379/0"))


@contextmanager
def _worker(pg_url: str, **env: str) -> Iterator[WorkerProcess]:
    """A worker on a queue of its own; stopped, and its queue's keys removed, afterwards."""
    prefix = "preflight-" + uuid.uuid4().hex[:8]
    queue = prefix + "-q"
    worker = WorkerProcess(queue, {
        "CELERY_BROKER_URL": f"{REDIS_BASE}/14",
        "LUNORA_DATABASE_URL": pg_url,
        "LUNORA_APP": "deploy_app:app",
        "DEPLOY_PREFIX": prefix,
        "DEPLOY_AUTO_MODEL": "1",
        "OPENAI_API_KEY": "",
        "OPENAI_BASE_URL": "",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        **env,
    }, concurrency=1, loglevel="INFO")
    try:
        yield worker
    finally:
        worker.stop()
        broker = redis.Redis.from_url(f"{REDIS_BASE}/14")
        broker.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        broker.close()


@pytest.mark.integration
@pytest.mark.slow
def test_a_worker_without_a_model_key_refuses_to_start_with_one_line(pg_url: str) -> None:
    with _worker(pg_url) as worker:
        with pytest.raises(RuntimeError, match="worker exited with"):
            worker.start(timeout=90)
        assert worker.proc is not None and worker.proc.returncode == EX_CONFIG, worker.log()
        lines = [line for line in worker.log().splitlines() if "CRITICAL" in line]
        assert len(lines) == 1, worker.log()
        assert "assistant (model 'auto') would run the deterministic offline model" in lines[0]
        assert "LUNORA_ALLOW_OFFLINE_MODEL=true" in lines[0]


@pytest.mark.integration
@pytest.mark.slow
def test_a_worker_whose_app_cannot_be_imported_exits_non_zero_at_startup(pg_url: str) -> None:
    unloadable = {"LUNORA_APP": "no_such_module_anywhere:app", "LUNORA_ALLOW_OFFLINE_MODEL": "true"}
    with _worker(pg_url, **unloadable) as worker:
        with pytest.raises(RuntimeError, match="worker exited with"):
            worker.start(timeout=90)
        assert worker.proc is not None and worker.proc.returncode == EX_CONFIG, worker.log()
        lines = [line for line in worker.log().splitlines() if "CRITICAL" in line]
        assert len(lines) == 1, worker.log()
        assert "cannot load LUNORA_APP='no_such_module_anywhere:app'" in lines[0], worker.log()


@pytest.mark.integration
@pytest.mark.slow
def test_the_opt_in_starts_the_worker_and_says_so_loudly(pg_url: str) -> None:
    with _worker(pg_url, LUNORA_ALLOW_OFFLINE_MODEL="true") as worker:
        worker.start(timeout=90)
        wait_for(lambda: "OFFLINE model" in worker.log(), 30, "no offline-model warning", worker.log)
        warning = next(line for line in worker.log().splitlines() if "OFFLINE model" in line)
        assert "WARNING" in warning and "assistant (model 'auto')" in warning
