"""The durable run queue (``agent_run_queue``) behind ``on_concurrent_run="queue"``.

Built on the same DDL as ``auto_create_tables``: it adds what 0001 installations lack (the queue
table and its index) and leaves everything else untouched.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op

from lunora_jobs.store.ddl import apply_schema

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the missing run-queue table and index."""
    apply_schema(op.get_bind())


def downgrade() -> None:
    """Forward-only: dropping the queue would lose runs waiting for their thread."""
    raise NotImplementedError("forward-only: dropping agent_run_queue would lose queued runs")
