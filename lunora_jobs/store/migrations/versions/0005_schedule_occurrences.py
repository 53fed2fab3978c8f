"""Schedules with leases and occurrences: ``agent_schedules`` gains ``kind`` (once | cron),
``due_at`` (the occurrence's own time; ``run_at`` becomes "next claimable at", the lease's expiry
while claimed), ``attempts``, ``run_id`` (the run the last fire started), ``fired_at`` and
``last_error``.

Frozen DDL. Each column is added only where missing (a database ``ensure_tables`` of a later
version provisioned already has them); rows of the old shape get ``due_at = run_at``.

Revision ID: 0005
Revises: 0006 (numbered 0005 when claimed; 0006 landed first)
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lunora_jobs.store.migrations._ops import PAYLOAD

revision = "0005"
down_revision = "0006"
branch_labels = None
depends_on = None

def _columns() -> list[sa.Column[object]]:
    return [
        sa.Column("kind", sa.String(16), nullable=False, server_default="once"),
        sa.Column("due_at", sa.BigInteger()),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("run_id", sa.String(128)),
        sa.Column("fired_at", sa.BigInteger()),
        sa.Column("last_error", PAYLOAD),
    ]


def upgrade() -> None:
    """Add the missing columns; old rows' occurrence time is their due time."""
    bind = op.get_bind()
    present = {c["name"] for c in sa.inspect(bind).get_columns("agent_schedules")}
    for column in _columns():
        if column.name not in present:
            op.add_column("agent_schedules", column)
    if "due_at" not in present:
        table = sa.table("agent_schedules", sa.column("due_at"), sa.column("run_at"))
        bind.execute(sa.update(table).where(table.c.due_at.is_(None)).values(due_at=table.c.run_at))


def downgrade() -> None:
    """Forward-only: the columns hold cron fires' last-fire record."""
    raise NotImplementedError("forward-only: dropping them would lose cron entries' last-fire record")
