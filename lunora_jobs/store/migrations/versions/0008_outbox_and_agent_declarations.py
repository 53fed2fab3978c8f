"""The start's transactional outbox (``agent_outbox``) and the agents live workers declare
(``agent_declarations``), issue 8 part 4.

- ``agent_outbox``: a run's first dispatch, inserted in the run's own transaction and deleted once
  the broker took it; the sweep sends what is left (a broker down at start). Index
  ``agent_outbox_agent_created_at_idx``; rows go with their run (ON DELETE CASCADE).
- ``agent_declarations``: one row per agent name with the last time a worker or a sweep of an app
  declaring it was seen; a run nobody claimed whose agent is not declared lately fails with
  ``UnknownAgentError``.

Frozen DDL. Safe on a database that ``ensure_tables`` already provisioned.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa

from lunora_jobs.store.migrations._ops import create_table

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the outbox and the declarations tables."""
    create_table(
        'agent_outbox',
        sa.Column('run_id', sa.String(128), primary_key=True),
        sa.Column('step', sa.String(255), primary_key=True),
        sa.Column('kind', sa.String(32), nullable=False),
        sa.Column('agent', sa.String(255), nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['agent_runs.id'], ondelete='CASCADE'),
        sa.Index('agent_outbox_agent_created_at_idx', 'agent', 'created_at'),
    )
    create_table(
        'agent_declarations',
        sa.Column('agent', sa.String(255), primary_key=True),
        sa.Column('seen_at', sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    """Forward-only: dropping the outbox would strand the runs whose first dispatch it still holds."""
    raise NotImplementedError("forward-only: agent_outbox may hold the first dispatch of started runs")
