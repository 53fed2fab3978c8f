"""The agent tables, created by the same DDL as ``auto_create_tables`` (only what is missing).

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from alembic import op

from lunora_jobs.store.ddl import apply_schema

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create whatever part of the schema is missing; a current schema is left untouched."""
    apply_schema(op.get_bind())


def downgrade() -> None:
    """Forward-only: dropping the agent tables would erase every conversation."""
    raise NotImplementedError("forward-only: dropping agent tables would erase conversations")
