"""The inbound-delivery ledger (``agent_inbound``): webhook and email dedupe, and pending replies.

Frozen DDL of that version: the table and its two indexes. Safe on a database that already has
them (``ensure_tables`` provisioned it before ``lunora db upgrade`` ran).

Revision ID: 0006
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa

from lunora_jobs.store.migrations._ops import PAYLOAD, create_table

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the inbound-delivery table and its indexes."""
    create_table(
        'agent_inbound',
        sa.Column('key', sa.String(64), primary_key=True),
        sa.Column('channel', sa.String(32), nullable=False),
        sa.Column('agent', sa.String(255), nullable=False),
        sa.Column('run_id', sa.String(128), nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('reply', PAYLOAD),
        sa.Column('reply_status', sa.String(16), nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.BigInteger(), nullable=False),
        sa.Index('agent_inbound_run_id_idx', 'run_id', unique=True),
        sa.Index('agent_inbound_reply_status_updated_at_idx', 'reply_status', 'updated_at'),
    )


def downgrade() -> None:
    """Forward-only: dropping the ledger would let redelivered events start their runs again."""
    raise NotImplementedError("forward-only: dropping agent_inbound would re-open every dedupe key")
