"""Indexes for the console and the HTTP API: the runs list (newest first, keyset-paged, by owner,
status or agent) and a run's usage (cost column).

Frozen DDL: the five indexes as they are at this revision. An index already present (a database
provisioned by ``ensure_tables`` of a later version) is left alone.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

INDEXES = [
    ("agent_runs_created_at_id_idx", "agent_runs", ["created_at", "id"]),
    ("agent_runs_owner_created_at_id_idx", "agent_runs", ["owner", "created_at", "id"]),
    ("agent_runs_status_created_at_id_idx", "agent_runs", ["status", "created_at", "id"]),
    ("agent_runs_agent_created_at_id_idx", "agent_runs", ["agent", "created_at", "id"]),
    ("agent_token_usage_run_id_idx", "agent_token_usage", ["run_id"]),
]


def upgrade() -> None:
    """Create the indexes that are missing."""
    inspector = sa.inspect(op.get_bind())
    for name, table, columns in INDEXES:
        if name not in {index["name"] for index in inspector.get_indexes(table)}:
            op.create_index(name, table, columns)


def downgrade() -> None:
    """Drop the indexes (no data is lost)."""
    for name, table, _ in INDEXES:
        op.drop_index(name, table_name=table)
