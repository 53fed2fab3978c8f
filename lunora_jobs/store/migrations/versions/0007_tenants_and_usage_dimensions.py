"""Tenants on runs and on the usage ledger, and the ledger's agent: what governance groups by.

- ``agent_runs.tenant`` (nullable) with ``agent_runs_tenant_created_at_id_idx``;
- ``agent_token_usage.tenant`` and ``.agent`` (nullable) with the indexes of the governance
  read-model's per-tenant, per-agent and per-model windows:
  ``agent_token_usage_tenant_created_at_idx``, ``agent_token_usage_agent_created_at_idx``,
  ``agent_token_usage_model_created_at_idx``.

Frozen DDL. Each column and index is added only where missing, so a database that
``ensure_tables`` already brought up to date passes through unchanged. Rows written before this
revision keep NULL (no tenant, agent unknown).

Revision ID: 0007
Revises: 0005 (0005 landed after 0006 and revises it)
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0005"
branch_labels = None
depends_on = None

COLUMNS = {
    "agent_runs": ("tenant",),
    "agent_token_usage": ("tenant", "agent"),
}
INDEXES = {
    "agent_runs_tenant_created_at_id_idx": ("agent_runs", ["tenant", "created_at", "id"]),
    "agent_token_usage_tenant_created_at_idx": ("agent_token_usage", ["tenant", "created_at"]),
    "agent_token_usage_agent_created_at_idx": ("agent_token_usage", ["agent", "created_at"]),
    "agent_token_usage_model_created_at_idx": ("agent_token_usage", ["model", "created_at"]),
}


def upgrade() -> None:
    """Add the tenant / agent columns and their indexes where missing."""
    inspector = sa.inspect(op.get_bind())
    for table, columns in COLUMNS.items():
        present = {c["name"] for c in inspector.get_columns(table)}
        for column in columns:
            if column not in present:
                op.add_column(table, sa.Column(column, sa.String(255)))
    for name, (table, indexed) in INDEXES.items():
        if name not in {str(i["name"]) for i in inspector.get_indexes(table)}:
            op.create_index(name, table, indexed)


def downgrade() -> None:
    """Forward-only: dropping the columns would erase who spent what."""
    raise NotImplementedError("forward-only: the tenant and agent of past usage would be lost")
