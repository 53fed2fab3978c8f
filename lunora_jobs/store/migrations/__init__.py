"""Run the Alembic migrations programmatically (what ``lunora db upgrade`` calls).

No ``alembic.ini`` is needed: the script location points into the installed package.

Example::

    from lunora_jobs.store.migrations import upgrade, current
    upgrade("postgresql://postgres@127.0.0.1:5432/app")   # to head
    current("postgresql://postgres@127.0.0.1:5432/app")   # "0005"

Adding a revision: copy the newest file in ``versions/``, bump ``revision`` (the next free number
on main) and set ``down_revision`` to the previous head; write the change as frozen DDL with
``_ops.create_table`` / plain ``op.*`` calls (never import ``schema.py``), and make the same change
in ``schema.py`` so ``ensure_tables`` builds what the migrations build (the schema-equality test
compares them on PostgreSQL, MariaDB and SQLite).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from lunora_jobs.config import Settings, normalize_database_url
from lunora_jobs.store.sql import create_engine

SCRIPT_LOCATION = "lunora_jobs.store:migrations"


def alembic_config(url: str | None = None) -> Config:
    """An Alembic ``Config`` for the packaged migrations against ``url`` (default: the settings)."""
    resolved = normalize_database_url(url) if url else Settings().resolved_database_url()
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    # Through attributes rather than the ini option: a '%' in a password would break interpolation.
    config.attributes["url"] = resolved
    return config


def upgrade(url: str | None = None, revision: str = "head") -> None:
    """Apply the forward-only migrations up to ``revision``."""
    command.upgrade(alembic_config(url), revision)


def head() -> str:
    """The newest revision this release ships."""
    found = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert found is not None
    return found


def upgrade_report(url: str | None = None, revision: str = "head") -> str:
    """``upgrade``, then one line saying what it did (what ``lunora db upgrade`` prints)."""
    where = _where(url)
    before = current(url)
    upgrade(url, revision)
    after = current(url)
    if before == after:
        return f"{where}: already at revision {after}; nothing to do."
    return f"{where}: upgraded from {before or 'an empty database'} to revision {after}."


def current_report(url: str | None = None) -> str:
    """One line: the database's revision and whether it is the newest (``lunora db current``)."""
    where, at, newest = _where(url), current(url), head()
    if at is None:
        return f"{where}: no revision yet; run `lunora db upgrade` to create the tables (latest: {newest})."
    if at == newest:
        return f"{where}: at revision {at} (the latest)."
    return f"{where}: at revision {at}; the latest is {newest} — run `lunora db upgrade`."


def _where(url: str | None) -> str:
    resolved = str(alembic_config(url).attributes["url"])
    return sa.engine.make_url(resolved).render_as_string(hide_password=True)


def current(url: str | None = None) -> str | None:
    """The revision the database is at (None before the first upgrade)."""
    config = alembic_config(url)
    engine = create_engine(str(config.attributes["url"]))
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
