"""Alembic environment: run migrations on the URL ``lunora_jobs.store.migrations`` hands over."""

from __future__ import annotations

from alembic import context

from lunora_jobs.store.schema import metadata
from lunora_jobs.store.sql import create_engine

config = context.config


def run_migrations_online() -> None:
    """Migrate over a live connection (the only mode: the DDL reads the catalog first)."""
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL: pass one to lunora_jobs.store.migrations.upgrade(url=...)")
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            context.configure(connection=connection, target_metadata=metadata, transaction_per_migration=True)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("offline (--sql) migrations are not supported: the DDL reads the catalog first")
run_migrations_online()
