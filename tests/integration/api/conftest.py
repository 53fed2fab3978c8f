"""The ``stack`` fixture (a fresh database, a worker and API processes started on demand) and the
``browser`` fixture (headless Chromium)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from api_stack import REDIS_DB, ApiStack
from private_redis import PrivateRedis, flush_owned
from suite_settings import require_module, service_unavailable

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture
def browser() -> Iterator[Any]:
    """Debian's headless Chromium driven by Playwright (no browser download)."""
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        service_unavailable("Debian's chromium is not installed (apt-get install chromium)")
    sync_playwright = require_module("playwright.sync_api").sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def stack_env() -> dict[str, str]:
    """Extra environment for every process of the stack (a test module may override this fixture)."""
    return {}


@pytest.fixture
def stack(pg_url: str, private_redis: PrivateRedis, tmp_path: Path, monkeypatch: Any,
          stack_env: dict[str, str]) -> Iterator[ApiStack]:
    """An API stack over this test's own database; every process it started is stopped afterwards."""
    flush_owned(private_redis.client(REDIS_DB))
    stack = ApiStack(pg_url, private_redis.url(REDIS_DB), tmp_path, monkeypatch, **stack_env)
    try:
        yield stack
    finally:
        stack.close()
