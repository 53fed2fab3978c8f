"""What every revision builds its frozen DDL with: create a table (with its indexes) unless present.

A revision lists its tables column by column, as they were at that version — never through
``schema.py``, which moves on. "Unless present" makes a revision safe on a database that
``ensure_tables`` (``auto_create_tables=True``) already provisioned before anyone ran
``lunora db upgrade``: what exists is left alone, what is missing is created.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

PAYLOAD: Any = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
"""A JSON or free-text payload column (MySQL's TEXT stops at 64 KB)."""

AUTO_ID: Any = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
"""An autoincrement key (SQLite only autoincrements ``INTEGER PRIMARY KEY``)."""

MYSQL_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def create_table(name: str, *elements: Any) -> None:
    """``CREATE TABLE`` with its indexes; for a table already there, only its missing indexes."""
    inspector = sa.inspect(op.get_bind())
    if not inspector.has_table(name):
        op.create_table(name, *elements, **MYSQL_OPTIONS)
        return
    present = {str(index["name"]).lower() for index in inspector.get_indexes(name)}
    for element in elements:
        if isinstance(element, sa.Index) and str(element.name).lower() not in present:
            columns = [str(getattr(c, "name", c)) for c in element.expressions]
            op.create_index(str(element.name), name, columns, unique=bool(element.unique))
