"""``lunora flower`` as the compose file and the chart run it: FLOWER_BASIC_AUTH protects the dashboard
and its HTTP API (which then answers with those credentials, not 401), /healthcheck stays open."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from image_support import wait_for
from suite_settings import require_module

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_BASE = os.environ.get("LUNORA_TEST_REDIS_BASE", "redis://127.0.0.1:6379")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def flower(tmp_path: Path) -> Iterator[str]:
    require_module("flower", extra="flower")
    port = _free_port()
    env = {**os.environ, "CELERY_BROKER_URL": f"{REDIS_BASE}/14", "FLOWER_BASIC_AUTH": "ops:s3cret"}
    log = (tmp_path / "flower.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lunora_jobs.cli", "flower", f"--port={port}", "--address=127.0.0.1"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(f"{url}/healthcheck", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, 60, "flower did not answer", lambda: (tmp_path / "flower.log").read_text(),
                 alive=[proc])
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
        log.close()


def test_flower_asks_for_the_basic_auth_password_on_dashboard_and_api(flower: str) -> None:
    assert httpx.get(f"{flower}/api/workers", timeout=10).status_code == 401
    assert httpx.get(f"{flower}/", timeout=10).status_code == 401
    assert httpx.get(f"{flower}/api/workers", auth=("ops", "wrong"), timeout=10).status_code == 401
    answer = httpx.get(f"{flower}/api/workers", auth=("ops", "s3cret"), timeout=30)
    assert answer.status_code == 200 and isinstance(answer.json(), dict)
    assert httpx.get(f"{flower}/healthcheck", timeout=10).text == "OK"
