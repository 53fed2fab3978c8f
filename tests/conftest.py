"""Shared fixtures: a throwaway database on each real server, a Redis namespace, a private Redis.

Several suites run side by side on one machine's shared services, so no test touches data it does
not own: each test gets its own databases (``lunora_t_<random>``, dropped at the end), its own Redis
key prefix and queue names on the shared Redis (``redis_url`` + ``redis_prefix``), and a test that
needs a whole Redis (``FLUSHDB``, db-wide keys such as Celery's ``unacked``) uses ``private_redis``,
a ``redis-server`` of the session's own. A missing service skips — or fails under ``CI=true``
(``suite_settings.service_unavailable``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from private_redis import PrivateRedis, RedisUnavailable
from suite_settings import service_unavailable, settings


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
        service_unavailable(f"{dialect} server not reachable: {exc}")
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
    yield from _server_database(settings.pg_admin_url, "postgresql")


@pytest.fixture
def mysql_url() -> Iterator[str]:
    """URL of a fresh, empty MariaDB database, dropped after the test."""
    yield from _server_database(settings.mysql_admin_url, "mysql")


@pytest.fixture
def sqlite_url(tmp_path: object) -> str:
    """URL of a fresh SQLite file."""
    return f"sqlite:///{tmp_path}/lunora.db"


@pytest.fixture
def redis_url() -> str:
    """The shared Redis server's URL; tests namespace their keys and queues with ``redis_prefix``
    and never flush it (use ``private_redis`` for that)."""
    client = redis.Redis.from_url(settings.redis_url, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        service_unavailable(f"Redis not reachable at {settings.redis_url}: {exc}")
    finally:
        client.close()
    return settings.redis_url


@pytest.fixture
def redis_prefix() -> str:
    """A unique key prefix so concurrent suites never share Redis keys or queues."""
    return "lunora-t-" + uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def private_redis() -> Iterator[PrivateRedis]:
    """A ``redis-server`` of this test session's own, on a free loopback port in a temporary folder.

    For tests that flush a database or rely on db-wide keys: ``private_redis.url(db)`` is theirs to
    wipe. Tests of one session run one after another, so each starts from what it finds; a test that
    needs an empty db flushes it first. Started on first use, stopped when the session ends.
    """
    try:
        server = PrivateRedis.start(settings.redis_server)
    except RedisUnavailable as exc:
        service_unavailable(str(exc))
    try:
        yield server
    finally:
        server.stop()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--chaos-full``: ``tests/chaos/test_chaos_scale.py`` runs its full configuration (100 runs,
    4 workers, 24 SIGKILLs) instead of the smaller one the default suite runs."""
    parser.addoption("--chaos-full", action="store_true", default=False,
                     help="run the full chaos-at-scale configuration (see docs/guarantees.md)")
