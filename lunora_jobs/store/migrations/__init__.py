"""Run the Alembic migrations programmatically (what ``lunora db upgrade`` calls).

No ``alembic.ini`` is needed: the script location points into the installed package.

Example::

    from lunora_jobs.store.migrations import upgrade, current
    upgrade("postgresql://postgres@127.0.0.1:5432/app")   # to head
    current("postgresql://postgres@127.0.0.1:5432/app")   # "0004"
"""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext

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


def current(url: str | None = None) -> str | None:
    """The revision the database is at (None before the first upgrade)."""
    config = alembic_config(url)
    engine = create_engine(str(config.attributes["url"]))
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
