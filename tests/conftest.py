"""Shared fixtures: a throwaway database on each real server, and a private Redis namespace.

Every test session gets its own databases (``lunora_t_<random>``) so suites can run side by side
on one machine without touching each other's tables, and drops them at the end.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

PG_ADMIN_URL = os.environ.get("LUNORA_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
MYSQL_ADMIN_URL = os.environ.get("LUNORA_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("LUNORA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _fresh_name() -> str:
    return "lunora_t_" + uuid.uuid4().hex[:10]


def _server_database(admin_url: str, dialect: str) -> Iterator[str]:
    import sqlalchemy as sa

    name = _fresh_name()
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            if dialect == "mysql":
                conn.execute(sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"))
            else:
                conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # pragma: no cover - only when the server is down
        admin.dispose()
        pytest.skip(f"{dialect} server not reachable: {exc}")
    base = admin_url.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with admin.connect() as conn:
            if dialect == "mysql":
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
            else:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """URL of a fresh, empty PostgreSQL database, dropped after the test."""
    yield from _server_database(PG_ADMIN_URL, "postgresql")


@pytest.fixture
def mysql_url() -> Iterator[str]:
    """URL of a fresh, empty MariaDB database, dropped after the test."""
    yield from _server_database(MYSQL_ADMIN_URL, "mysql")


@pytest.fixture
def sqlite_url(tmp_path: object) -> str:
    """URL of a fresh SQLite file."""
    return f"sqlite:///{tmp_path}/lunora.db"


@pytest.fixture
def redis_url() -> str:
    """The Redis server URL; tests namespace their keys with ``redis_prefix``."""
    return REDIS_URL


@pytest.fixture
def redis_prefix() -> str:
    """A unique key prefix so concurrent suites never share Redis keys or queues."""
    return "lunora-t-" + uuid.uuid4().hex[:8]
