"""The agent tables of the first release: threads, messages, runs, the step ledger, tool calls,
token usage, schedules, the memory graph and episodes, pricing, and action proposals.

Frozen DDL of that version (later changes are later revisions). Safe on a database that
``ensure_tables`` provisioned already: what exists is left alone.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa

from lunora_jobs.store.migrations._ops import AUTO_ID, PAYLOAD, create_table

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the first release's tables and indexes."""
    create_table(
        'agent_edges',
        sa.Column('id', AUTO_ID, primary_key=True, autoincrement=True),
        sa.Column('owner', sa.String(255), nullable=False),
        sa.Column('src', sa.String(128), nullable=False),
        sa.Column('relation', sa.String(128), nullable=False),
        sa.Column('dst', sa.String(128), nullable=False),
        sa.Column('weight', sa.Float(), nullable=False, server_default='1'),
        sa.Column('updated_at', sa.BigInteger(), nullable=False),
        sa.Index('agent_edges_owner_dst_idx', 'owner', 'dst'),
        sa.Index('agent_edges_owner_src_relation_dst_idx', 'owner', 'src', 'relation', 'dst', unique=True),
    )
    create_table(
        'agent_entities',
        sa.Column('id', sa.String(128), primary_key=True),
        sa.Column('owner', sa.String(255), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('normalized', sa.String(255), nullable=False),
        sa.Column('type', sa.String(64)),
        sa.Column('weight', sa.Float(), nullable=False, server_default='1'),
        sa.Column('updated_at', sa.BigInteger(), nullable=False),
        sa.Index('agent_entities_owner_normalized_idx', 'owner', 'normalized', unique=True),
    )
    create_table(
        'agent_episodes',
        sa.Column('id', sa.String(128), primary_key=True),
        sa.Column('owner', sa.String(255)),
        sa.Column('run_id', sa.String(128), nullable=False),
        sa.Column('summary', PAYLOAD, nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Index('agent_episodes_owner_created_at_idx', 'owner', 'created_at'),
        sa.Index('agent_episodes_run_id_idx', 'run_id', unique=True),
    )
    create_table(
        'agent_pricing',
        sa.Column('model', sa.String(255), primary_key=True),
        sa.Column('input_per_mtok', sa.Float(), nullable=False),
        sa.Column('output_per_mtok', sa.Float(), nullable=False),
        sa.Column('updated_at', sa.BigInteger(), nullable=False),
    )
    create_table(
        'agent_schedules',
        sa.Column('id', sa.String(128), primary_key=True),
        sa.Column('agent', sa.String(255), nullable=False),
        sa.Column('run_at', sa.BigInteger(), nullable=False),
        sa.Column('payload', PAYLOAD),
        sa.Column('status', sa.String(32), nullable=False, server_default='pending'),
        sa.Column('claimed_by', sa.String(255)),
        sa.Column('claimed_at', sa.BigInteger()),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Index('agent_schedules_status_run_at_idx', 'status', 'run_at'),
    )
    create_table(
        'agent_threads',
        sa.Column('id', sa.String(128), primary_key=True),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('owner', sa.String(255)),
        sa.Column('title', PAYLOAD),
        sa.Column('status', sa.String(32), nullable=False, server_default='idle'),
        sa.Column('state', PAYLOAD),
        sa.Column('model', sa.String(255)),
        sa.Column('agent', sa.String(255)),
        sa.Column('active_run_id', sa.String(128)),
        sa.Column('input_tokens', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('output_tokens', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('next_seq', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.BigInteger(), nullable=False),
        sa.Index('agent_threads_key_idx', 'key', unique=True),
        sa.Index('agent_threads_owner_updated_at_idx', 'owner', 'updated_at'),
    )
    create_table(
        'agent_action_proposals',
        sa.Column('id', sa.String(128), primary_key=True),
        sa.Column('tenant_ref', sa.String(255)),
        sa.Column('actor_ref', sa.String(255), nullable=False),
        sa.Column('thread_id', sa.String(255), nullable=False),
        sa.Column('run_id', sa.String(255)),
        sa.Column('call_id', sa.String(255), nullable=False),
        sa.Column('tool_name', sa.String(255), nullable=False),
        sa.Column('input', PAYLOAD, nullable=False),
        sa.Column('card', PAYLOAD),
        sa.Column('idempotency_key', sa.String(255), nullable=False),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('decision', sa.String(32)),
        sa.Column('decided_by', sa.String(255)),
        sa.Column('decision_reason', PAYLOAD),
        sa.Column('decided_at', sa.BigInteger()),
        sa.Column('expires_at', sa.BigInteger()),
        sa.Column('lease_owner', sa.String(255)),
        sa.Column('lease_token', sa.String(64)),
        sa.Column('lease_expires_at', sa.BigInteger()),
        sa.Column('due_at', sa.BigInteger()),
        sa.Column('generation', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('result', PAYLOAD),
        sa.Column('error', PAYLOAD),
        sa.Column('settled_at', sa.BigInteger()),
        sa.Column('version', sa.BigInteger(), nullable=False, server_default='1'),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['thread_id'], ['agent_threads.id'], ondelete='CASCADE'),
        sa.Index('agent_action_proposals_status_due_at_idx', 'status', 'due_at'),
        sa.Index('agent_action_proposals_status_expires_at_idx', 'status', 'expires_at'),
        sa.Index('agent_action_proposals_thread_id_actor_ref_created_at_idx', 'thread_id', 'actor_ref', 'created_at'),
    )
    create_table(
        'agent_messages',
        sa.Column('id', sa.String(128), primary_key=True),
        sa.Column('thread_id', sa.String(128), nullable=False),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('seq', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('role', sa.String(32), nullable=False),
        sa.Column('content', PAYLOAD),
        sa.Column('run_id', sa.String(128)),
        sa.Column('tool_calls', PAYLOAD),
        sa.Column('tool_call_id', sa.String(128)),
        sa.Column('name', sa.String(255)),
        sa.Column('metadata', PAYLOAD),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['thread_id'], ['agent_threads.id'], ondelete='CASCADE'),
        sa.Index('agent_messages_thread_id_key_idx', 'thread_id', 'key', unique=True),
        sa.Index('agent_messages_thread_id_role_idx', 'thread_id', 'role'),
        sa.Index('agent_messages_thread_id_seq_idx', 'thread_id', 'seq', unique=True),
    )
    create_table(
        'agent_runs',
        sa.Column('id', sa.String(128), primary_key=True),
        sa.Column('thread_id', sa.String(128), nullable=False),
        sa.Column('agent', sa.String(255), nullable=False),
        sa.Column('owner', sa.String(255)),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('input', PAYLOAD),
        sa.Column('result', PAYLOAD),
        sa.Column('error', PAYLOAD),
        sa.Column('stopped', sa.String(32)),
        sa.Column('turns', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('input_tokens', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('output_tokens', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['thread_id'], ['agent_threads.id'], ondelete='CASCADE'),
        sa.Index('agent_runs_status_updated_at_idx', 'status', 'updated_at'),
        sa.Index('agent_runs_thread_id_created_at_idx', 'thread_id', 'created_at'),
    )
    create_table(
        'agent_token_usage',
        sa.Column('id', AUTO_ID, primary_key=True, autoincrement=True),
        sa.Column('actor', sa.String(255)),
        sa.Column('model', sa.String(255)),
        sa.Column('thread_id', sa.String(128)),
        sa.Column('run_id', sa.String(128)),
        sa.Column('step', sa.String(255)),
        sa.Column('input_tokens', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('output_tokens', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('cache_read_tokens', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('cache_write_tokens', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('cost_usd', sa.Float()),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['thread_id'], ['agent_threads.id'], ondelete='CASCADE'),
        sa.Index('agent_token_usage_actor_created_at_idx', 'actor', 'created_at'),
        sa.Index('agent_token_usage_created_at_idx', 'created_at'),
        sa.Index('agent_token_usage_thread_id_idx', 'thread_id'),
    )
    create_table(
        'agent_tool_calls',
        sa.Column('run_id', sa.String(128), primary_key=True),
        sa.Column('id', sa.String(128), primary_key=True),
        sa.Column('thread_id', sa.String(128), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('input', PAYLOAD),
        sa.Column('output', PAYLOAD),
        sa.Column('status', sa.String(32), nullable=False, server_default='pending'),
        sa.Column('decision', sa.String(32)),
        sa.Column('decided_by', sa.String(255)),
        sa.Column('decided_at', sa.BigInteger()),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['thread_id'], ['agent_threads.id'], ondelete='CASCADE'),
        sa.Index('agent_tool_calls_thread_id_status_idx', 'thread_id', 'status'),
    )
    create_table(
        'agent_steps',
        sa.Column('run_id', sa.String(128), primary_key=True),
        sa.Column('name', sa.String(255), primary_key=True),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('result', PAYLOAD),
        sa.Column('error', PAYLOAD),
        sa.Column('attempt', sa.Integer(), nullable=False, server_default='0'),
        sa.Column('generation', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('lease_owner', sa.String(255)),
        sa.Column('lease_expires_at', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['agent_runs.id'], ondelete='CASCADE'),
        sa.Index('agent_steps_status_lease_expires_at_idx', 'status', 'lease_expires_at'),
    )


def downgrade() -> None:
    """Forward-only: dropping the agent tables would erase every conversation."""
    raise NotImplementedError("forward-only: dropping agent tables would erase conversations")
