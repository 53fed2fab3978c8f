"""Chaos tests reuse the worker-fleet harness and test app of ``tests/integration/workers``; the
suites that restart their database share one private PostgreSQL per module (``private_pg``)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

_FLEET_DIR = str(Path(__file__).resolve().parents[1] / "integration" / "workers")
if _FLEET_DIR not in sys.path:
    sys.path.insert(0, _FLEET_DIR)

from pg_private import PostgresUnavailable, PrivatePostgres  # noqa: E402  (after the path set-up)
from suite_settings import service_unavailable  # noqa: E402


@pytest.fixture(scope="module")
def private_pg() -> Iterator[PrivatePostgres]:
    """One private PostgreSQL server for the module, stopped and removed at the end (the shared one
    on 5432 serves other suites: a test that restarts its database restarts this one)."""
    try:
        server = PrivatePostgres.create()
    except PostgresUnavailable as exc:
        service_unavailable(f"no private PostgreSQL for the restart tests: {exc}")
    try:
        yield server
    finally:
        server.destroy()


@pytest.fixture
def private_pg_url(private_pg: PrivatePostgres) -> str:
    """A fresh database on the private server (restarted first if an earlier test left it down)."""
    if not private_pg.running():
        private_pg.start()
    return private_pg.create_database("chaos_" + uuid.uuid4().hex[:10])
