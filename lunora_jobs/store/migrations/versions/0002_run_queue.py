"""The durable run queue (``agent_run_queue``) behind ``on_concurrent_run="queue"``.

Frozen DDL of that version: the queue table and its two indexes. Safe on a database that already
has them (``ensure_tables``, or a 0001 built before revisions were frozen).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa

from lunora_jobs.store.migrations._ops import AUTO_ID, create_table

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the run-queue table and its indexes."""
    create_table(
        'agent_run_queue',
        sa.Column('seq', AUTO_ID, primary_key=True, autoincrement=True),
        sa.Column('thread_id', sa.String(128), nullable=False),
        sa.Column('run_id', sa.String(128), nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['thread_id'], ['agent_threads.id'], ondelete='CASCADE'),
        sa.Index('agent_run_queue_run_id_idx', 'run_id', unique=True),
        sa.Index('agent_run_queue_thread_id_seq_idx', 'thread_id', 'seq'),
    )


def downgrade() -> None:
    """Forward-only: dropping the queue would lose runs waiting for their thread."""
    raise NotImplementedError("forward-only: dropping agent_run_queue would lose queued runs")
