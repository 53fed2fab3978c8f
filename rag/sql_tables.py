"""What the SQL-backed stores share: portable column types and an idempotent, race-tolerant CREATE."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from rag.settings import normalize_database_url

LONG_TEXT = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
BLOB = sa.LargeBinary().with_variant(mysql.MEDIUMBLOB(), "mysql", "mariadb")


def create_table_once(engine: sa.Engine, table: sa.Table) -> None:
    """Create ``table`` (and its indexes) unless it exists, tolerating a concurrent creator: several
    processes may start at once, and the loser of the check-then-create race gets "already exists"."""
    try:
        table.create(engine, checkfirst=True)
    except sa.exc.DatabaseError:
        if not sa.inspect(engine).has_table(table.name):
            raise


def engine_of(url_or_engine: str | sa.Engine) -> sa.Engine:
    """An engine for a URL (drivers picked by ``normalize_database_url``), or the engine given."""
    if isinstance(url_or_engine, str):
        return sa.create_engine(normalize_database_url(url_or_engine))
    return url_or_engine
