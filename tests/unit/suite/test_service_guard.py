"""A test whose service is missing skips on a developer's machine and fails under ``CI=true``.

Runs ``service_probe.py`` in a child pytest with every service pointed at a closed loopback port
(and ``redis-server`` at a binary that does not exist), once without and once with ``CI=true``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ports import free_port

PROBE = Path(__file__).with_name("service_probe.py")
TESTS = Path(__file__).resolve().parents[2]


def _run_probe(tmp_path: Path, ci: str | None) -> str:
    port = free_port()  # nothing listens there: every connection is refused at once
    env = {
        **os.environ,
        "LUNORA_TEST_PG_URL": f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres",
        "LUNORA_TEST_REDIS_URL": f"redis://127.0.0.1:{port}/0",
        "LUNORA_TEST_REDIS_SERVER": str(tmp_path / "no-such-redis-server"),
    }
    env.pop("CI", None)
    if ci is not None:
        env["CI"] = ci
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(TESTS.parent),
         str(PROBE)],
        cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    return done.stdout + done.stderr


def _summary(output: str) -> str:
    """pytest's closing line, e.g. ``3 skipped in 1.60s``."""
    return output.strip().splitlines()[-1]


@pytest.mark.parametrize("ci", [None, "false"])
def test_missing_services_skip_outside_ci(tmp_path: Path, ci: str | None) -> None:
    output = _run_probe(tmp_path, ci)
    assert re.fullmatch(r"3 skipped in [\d.]+s", _summary(output)), output
    assert "postgresql server not reachable" in output and "Redis not reachable" in output, output
    assert "no-such-redis-server not found" in output, output


@pytest.mark.parametrize("ci", ["true", "1"])
def test_missing_services_fail_under_ci(tmp_path: Path, ci: str) -> None:
    output = _run_probe(tmp_path, ci)
    assert re.fullmatch(r"3 errors in [\d.]+s", _summary(output)), output
    for test in ("test_needs_postgres", "test_needs_shared_redis", "test_needs_private_redis"):
        assert re.search(rf"^ERROR .*{test}", output, re.MULTILINE), output
    assert "CI=true: .ci/run starts every service" in output, output
