"""Model prices with effective-from dates, and where every usage row's cost comes from.

- ``agent_pricing``: keyed by ``(model, effective_from)`` instead of ``model``, with a cached-input
  price; prices are DOUBLE (MySQL's FLOAT is single precision). Rows of the old table are kept,
  effective from 0.
- ``agent_token_usage``: ``cost_source`` ("provider" | "estimate" | "none"); ``cost_usd`` DOUBLE on
  MySQL/MariaDB.

Frozen DDL. Each step runs only where the database still has the old shape, so an installation whose
0001 already created the current tables passes through unchanged.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

MYSQL: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def _create_pricing() -> sa.Table:
    return op.create_table(
        "agent_pricing",
        sa.Column("model", sa.String(255), primary_key=True),
        sa.Column("effective_from", sa.BigInteger, primary_key=True, autoincrement=False, server_default="0"),
        sa.Column("input_per_mtok", sa.Double, nullable=False),
        sa.Column("cached_input_per_mtok", sa.Double),
        sa.Column("output_per_mtok", sa.Double, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        **MYSQL,
    )


def upgrade() -> None:
    """Re-key agent_pricing (keeping its rows) and add agent_token_usage.cost_source, where missing."""
    bind = op.get_bind()
    inspector = sa.inspect(bind)
    pricing_columns = {c["name"] for c in inspector.get_columns("agent_pricing")}
    if "effective_from" not in pricing_columns:
        old = sa.table(
            "agent_pricing", sa.column("model"), sa.column("input_per_mtok"), sa.column("output_per_mtok"),
            sa.column("updated_at"),
        )
        rows = [dict(r) for r in bind.execute(sa.select(old)).mappings()]
        op.drop_table("agent_pricing")
        table = _create_pricing()
        if rows:
            op.bulk_insert(table, [{**r, "effective_from": 0, "cached_input_per_mtok": None} for r in rows])
    usage_columns = {c["name"] for c in inspector.get_columns("agent_token_usage")}
    if "cost_source" not in usage_columns:
        op.add_column("agent_token_usage", sa.Column("cost_source", sa.String(16)))
    if bind.dialect.name == "mysql":
        op.alter_column(
            "agent_token_usage", "cost_usd", type_=sa.Double(), existing_type=sa.Float(), existing_nullable=True
        )


def downgrade() -> None:
    """Forward-only: the old key cannot hold a model's price history."""
    raise NotImplementedError("forward-only: agent_pricing's old key cannot hold dated prices")
