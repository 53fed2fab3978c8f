"""The liveness heartbeat: a real worker keeps its heartbeat file fresh while its broker is down (so
the chart's probe never restarts a fleet for a Redis outage), and removes it when it stops."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from helm_support import named, render
from image_support import wait_for

from workers.testing import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A redis-server of our own (the test kills it), on a free loopback port."""
    port = _free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    wait_for(lambda: _pings(client), 20, "the private redis-server did not start")
    try:
        yield url, proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _pings(client: redis.Redis) -> bool:
    with contextlib.suppress(redis.exceptions.ConnectionError):
        return bool(client.ping())
    return False


def _probe_command() -> list[str]:
    worker = named(render({}), "Deployment", "jobs-lunora-jobs-worker-default")
    container = worker["spec"]["template"]["spec"]["containers"][0]
    command: list[str] = container["livenessProbe"]["exec"]["command"]
    return command


def test_the_heartbeat_stays_fresh_while_the_broker_is_down(
    private_redis: tuple[str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    url, server = private_redis
    heartbeat = tmp_path / "heartbeat"
    env = {
        "CELERY_BROKER_URL": url, "LUNORA_HEARTBEAT_FILE": str(heartbeat), "LUNORA_HEARTBEAT_INTERVAL": "0.2",
    }
    worker = WorkerProcess("hb-" + uuid.uuid4().hex[:8], env, concurrency=1)
    probe = _probe_command()
    probe_env = {**os.environ, "LUNORA_HEARTBEAT_FILE": str(heartbeat)}
    try:
        worker.start(timeout=60)
        assert heartbeat.exists()
        assert subprocess.run(probe, env=probe_env, timeout=10).returncode == 0

        server.kill()  # the broker goes away; the worker keeps trying to reconnect
        server.wait(timeout=10)
        down_at = time.time()
        wait_for(lambda: heartbeat.stat().st_mtime > down_at + 2, 30,
                 "the heartbeat stopped while the broker was down", worker.log)
        assert worker.proc is not None and worker.proc.poll() is None, worker.log()
        assert subprocess.run(probe, env=probe_env, timeout=10).returncode == 0
    finally:
        worker.stop(timeout=20)
    assert not heartbeat.exists(), "a stopped worker must not look alive"


def test_the_probe_fails_on_a_stale_or_missing_heartbeat(tmp_path: Path) -> None:
    heartbeat = tmp_path / "heartbeat"
    probe = _probe_command()
    env = {**os.environ, "LUNORA_HEARTBEAT_FILE": str(heartbeat)}
    assert subprocess.run(probe, env=env, capture_output=True, timeout=10).returncode != 0
    heartbeat.touch()
    assert subprocess.run(probe, env=env, timeout=10).returncode == 0
    stale = time.time() - 120
    os.utime(heartbeat, (stale, stale))
    assert subprocess.run(probe, env=env, timeout=10).returncode != 0
