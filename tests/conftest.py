"""Shared fixtures: a throwaway database on each real server, a Redis namespace, a private Redis.

Several suites run side by side on one machine's shared services, so no test touches data it does
not own: each test gets its own databases (``lunora_t_<random>``, dropped at the end;
``pg_tables_url`` / ``sqlite_tables_url`` clone a per-session template that already has the tables),
its own Redis key prefix and queue names on the shared Redis (``redis_url`` + ``redis_prefix``), and a
test that needs a whole Redis (``FLUSHDB``, db-wide keys such as Celery's ``unacked``) uses ``private_redis``,
a ``redis-server`` of the test's own. A missing service skips — or fails under ``CI=true``
(``suite_settings.service_unavailable``).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from private_redis import PrivateRedis, RedisUnavailable
from suite_settings import service_unavailable, settings


def _fresh_name() -> str:
    return "lunora_t_" + uuid.uuid4().hex[:10]


def _server_database(admin_url: str, dialect: str, *, template: str | None = None,
                     name: str | None = None) -> Iterator[str]:
    import sqlalchemy as sa

    name = name or _fresh_name()
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            if dialect == "mysql":
                conn.execute(sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"))
            elif template is not None:
                conn.execute(sa.text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
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


@pytest.fixture(scope="session")
def pg_tables_template() -> Iterator[str]:
    """Name of a PostgreSQL database holding the agent tables (empty), provisioned once per session
    (per xdist worker) by ``ensure_tables``, for ``pg_tables_url`` to clone. Nobody connects to it
    after provisioning: ``CREATE DATABASE ... TEMPLATE`` refuses a template with open connections."""
    import sqlalchemy as sa

    from lunora_jobs.store.ddl import ensure_tables

    name = "lunora_tpl_" + uuid.uuid4().hex[:10]
    database = _server_database(settings.pg_admin_url, "postgresql", name=name)
    try:
        engine = sa.create_engine(next(database))
        try:
            ensure_tables(engine)
        finally:
            engine.dispose()
        yield name
    finally:
        database.close()  # drops it


@pytest.fixture
def pg_tables_url(pg_tables_template: str) -> Iterator[str]:
    """URL of a fresh PostgreSQL database that already has the agent tables, empty (dropped after the
    test): a clone of ``pg_tables_template``, the schema ``ensure_tables`` builds without paying its
    DDL per test (~1 s each on PostgreSQL). For store contract tests; tests of provisioning itself
    take the empty ``pg_url``."""
    yield from _server_database(settings.pg_admin_url, "postgresql", template=pg_tables_template)


@pytest.fixture
def mysql_url() -> Iterator[str]:
    """URL of a fresh, empty MariaDB database, dropped after the test."""
    yield from _server_database(settings.mysql_admin_url, "mysql")


@pytest.fixture
def sqlite_url(tmp_path: object) -> str:
    """URL of a fresh SQLite file."""
    return f"sqlite:///{tmp_path}/lunora.db"


@pytest.fixture(scope="session")
def sqlite_tables_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file holding the agent tables (empty), provisioned once per session by
    ``ensure_tables`` on the store's own engine (its pragmas, WAL), for ``sqlite_tables_url`` to copy."""
    from lunora_jobs.store import create_engine
    from lunora_jobs.store.ddl import ensure_tables

    path = tmp_path_factory.mktemp("sqlite-template") / "lunora.db"
    engine = create_engine(f"sqlite:///{path}")
    try:
        ensure_tables(engine)
    finally:
        engine.dispose()  # the last connection closing checkpoints the WAL into the file
    return path


@pytest.fixture
def sqlite_tables_url(sqlite_tables_template: Path, tmp_path: Path) -> str:
    """URL of a fresh SQLite file that already has the agent tables, empty: a copy of
    ``sqlite_tables_template`` (~0.8 s of DDL per test saved). Provisioning tests take ``sqlite_url``."""
    target = tmp_path / "lunora.db"
    shutil.copyfile(sqlite_tables_template, target)
    return f"sqlite:///{target}"


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


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    """A ``redis-server`` of this test's own, on a free loopback port in a temporary folder.

    For tests that flush a database or rely on db-wide keys: the whole server is the test's alone
    (no other test, suite or process uses it), so ``private_redis.url(db)`` is theirs to wipe. Started
    for the test (~0.1 s), stopped after it.
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
