"""The test suite's own settings: where its services are, and whether it runs in CI.

Read once from the environment (pydantic-settings), like the app's ``lunora_jobs.config.Settings``,
so no test reads ``os.environ`` for these. ``service_unavailable`` is the one way a test reacts to a
missing service: it skips on a developer's machine and fails under ``CI=true``, where every service
is started by ``.ci/run`` and a skip would hide a broken setup.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import NoReturn

import pytest
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class SuiteSettings(BaseSettings):
    """Environment of a test session (every field has the development machine's default)."""

    model_config = SettingsConfigDict(extra="ignore")

    ci: bool = Field(default=False, validation_alias="CI")
    """``CI=true`` (any value but empty, ``0``, ``false``, ``no``): service tests fail instead of skip."""
    pg_admin_url: str = Field(
        default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres", validation_alias="LUNORA_TEST_PG_URL"
    )
    mysql_admin_url: str = Field(
        default="mysql+pymysql://root@127.0.0.1:3306/test", validation_alias="LUNORA_TEST_MYSQL_URL"
    )
    redis_url: str = Field(default="redis://127.0.0.1:6379/0", validation_alias="LUNORA_TEST_REDIS_URL")
    """The shared Redis: tests use it only under their own ``redis_prefix`` keys and queue names."""
    amqp_url: str = Field(
        default="amqp://guest:guest@127.0.0.1:5672//", validation_alias="LUNORA_TEST_AMQP_URL"
    )
    redis_server: str = Field(default="redis-server", validation_alias="LUNORA_TEST_REDIS_SERVER")
    """The ``redis-server`` binary the ``private_redis`` fixture starts."""

    @field_validator("ci", mode="before")
    @classmethod
    def _truthy(cls, value: object) -> bool:
        if isinstance(value, bool):
            return value
        return str(value).strip().lower() not in ("", "0", "false", "no", "off")


settings = SuiteSettings()


def service_unavailable(reason: str) -> NoReturn:
    """Skip the test because a service it needs is missing — or fail it, under ``CI=true``."""
    if settings.ci:
        pytest.fail(f"{reason} (CI=true: .ci/run starts every service, so this is a failure, not a skip)",
                    pytrace=False)
    pytest.skip(reason)


def require_module(name: str, extra: str = "all-tests") -> ModuleType:
    """Import an optional package a test needs: skip without it (the whole module, when called at import
    time) on a developer's machine, fail under ``CI=true``, where ``.ci/run`` installs every extra."""
    try:
        return importlib.import_module(name)
    except ImportError:
        reason = f"{name} is not installed: pip install -e \".[{extra}]\""
        if settings.ci:
            pytest.fail(f"{reason} (CI=true: .ci/run installs it, so this is a failure, not a skip)",
                        pytrace=False)
        pytest.skip(reason, allow_module_level=True)
