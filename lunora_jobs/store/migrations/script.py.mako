"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}
"""

from alembic import op

from lunora_jobs.store.ddl import apply_schema

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_schema(op.get_bind())


def downgrade() -> None:
    raise NotImplementedError("forward-only: dropping agent tables would erase conversations")
