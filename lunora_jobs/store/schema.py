"""The agent tables as SQLAlchemy Core, written once and rendered in each dialect's terms.

Portable on purpose: JSON payloads are TEXT (LONGTEXT on MySQL, whose TEXT stops at 64 KB),
timestamps are BIGINT epoch-ms, booleans are INTEGER 0/1, foreign keys are table constraints
with ON DELETE CASCADE (MySQL ignores a column-level REFERENCES), and MySQL tables are InnoDB
``utf8mb4_bin`` so ``owner = 'alice'`` misses ``'ALICE'`` exactly as on Postgres and SQLite.

Indexes are named ``<table>_<columns>_idx``; unique constraints are unique indexes under the same
rule, so ``ensure_tables`` can look every one of them up in the catalog by name.

Example::

    from lunora_jobs.store.schema import metadata, threads
    print(sorted(metadata.tables))  # ['agent_edges', 'agent_entities', ...]
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

metadata = sa.MetaData()

IDENTITY = 255
"""Width of identity columns (owner, actor, keys): longer input is refused, never truncated."""

ID = 128
"""Width of generated and provider ids (thread, run, message, tool call)."""

Payload: Any = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
"""A JSON or free-text payload column."""

AutoId: Any = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
"""An autoincrement key (SQLite only autoincrements ``INTEGER PRIMARY KEY``)."""

MYSQL_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def index(table: str, *columns: str, unique: bool = False) -> sa.Index:
    """An index named by the ``<table>_<columns>_idx`` rule."""
    return sa.Index(f"{table}_{'_'.join(columns)}_idx", *columns, unique=unique)


def cascade_to(column: str, target: str) -> sa.ForeignKeyConstraint:
    """A table-level foreign key that deletes the row with its parent."""
    return sa.ForeignKeyConstraint([column], [target], ondelete="CASCADE")


def _ts(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.BigInteger, nullable=nullable)


def _count(name: str) -> sa.Column[Any]:
    return sa.Column(name, sa.BigInteger, nullable=False, server_default="0")


threads = sa.Table(
    "agent_threads",
    metadata,
    sa.Column("id", sa.String(ID), primary_key=True),
    sa.Column("key", sa.String(IDENTITY), nullable=False),
    sa.Column("owner", sa.String(IDENTITY)),
    sa.Column("title", Payload),
    sa.Column("status", sa.String(32), nullable=False, server_default="idle"),
    sa.Column("state", Payload),
    sa.Column("model", sa.String(IDENTITY)),
    sa.Column("agent", sa.String(IDENTITY)),
    sa.Column("active_run_id", sa.String(ID)),
    _count("input_tokens"),
    _count("output_tokens"),
    # The per-thread message counter: bumped in the appending transaction, it hands out `seq`.
    _count("next_seq"),
    _ts("created_at"),
    _ts("updated_at"),
    index("agent_threads", "key", unique=True),
    index("agent_threads", "owner", "updated_at"),
    **MYSQL_OPTIONS,
)

messages = sa.Table(
    "agent_messages",
    metadata,
    sa.Column("id", sa.String(ID), primary_key=True),
    sa.Column("thread_id", sa.String(ID), nullable=False),
    sa.Column("key", sa.String(IDENTITY), nullable=False),
    sa.Column("seq", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("role", sa.String(32), nullable=False),
    sa.Column("content", Payload),
    sa.Column("run_id", sa.String(ID)),
    sa.Column("tool_calls", Payload),
    sa.Column("tool_call_id", sa.String(ID)),
    sa.Column("name", sa.String(IDENTITY)),
    sa.Column("metadata", Payload),
    _ts("created_at"),
    cascade_to("thread_id", "agent_threads.id"),
    index("agent_messages", "thread_id", "seq", unique=True),
    index("agent_messages", "thread_id", "key", unique=True),
    index("agent_messages", "thread_id", "role"),
    **MYSQL_OPTIONS,
)

runs = sa.Table(
    "agent_runs",
    metadata,
    sa.Column("id", sa.String(ID), primary_key=True),
    sa.Column("thread_id", sa.String(ID), nullable=False),
    sa.Column("agent", sa.String(IDENTITY), nullable=False),
    sa.Column("owner", sa.String(IDENTITY)),
    sa.Column("tenant", sa.String(IDENTITY)),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("input", Payload),
    sa.Column("result", Payload),
    sa.Column("error", Payload),
    sa.Column("stopped", sa.String(32)),
    _count("turns"),
    _count("input_tokens"),
    _count("output_tokens"),
    _ts("created_at"),
    _ts("updated_at"),
    cascade_to("thread_id", "agent_threads.id"),
    index("agent_runs", "thread_id", "created_at"),
    index("agent_runs", "status", "updated_at"),
    # The console's runs list: newest first, keyset-paged, optionally by owner / status / agent.
    index("agent_runs", "created_at", "id"),
    index("agent_runs", "owner", "created_at", "id"),
    index("agent_runs", "status", "created_at", "id"),
    index("agent_runs", "agent", "created_at", "id"),
    index("agent_runs", "tenant", "created_at", "id"),
    **MYSQL_OPTIONS,
)

steps = sa.Table(
    "agent_steps",
    metadata,
    sa.Column("run_id", sa.String(ID), primary_key=True),
    sa.Column("name", sa.String(IDENTITY), primary_key=True),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("result", Payload),
    sa.Column("error", Payload),
    sa.Column("attempt", sa.Integer, nullable=False, server_default="0"),
    sa.Column("generation", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("lease_owner", sa.String(IDENTITY)),
    sa.Column("lease_expires_at", sa.BigInteger, nullable=False, server_default="0"),
    _ts("created_at"),
    _ts("updated_at"),
    cascade_to("run_id", "agent_runs.id"),
    index("agent_steps", "status", "lease_expires_at"),
    **MYSQL_OPTIONS,
)

tool_calls = sa.Table(
    "agent_tool_calls",
    metadata,
    sa.Column("run_id", sa.String(ID), primary_key=True),
    sa.Column("id", sa.String(ID), primary_key=True),
    sa.Column("thread_id", sa.String(ID), nullable=False),
    sa.Column("name", sa.String(IDENTITY), nullable=False),
    sa.Column("input", Payload),
    sa.Column("output", Payload),
    sa.Column("status", sa.String(32), nullable=False, server_default="pending"),
    sa.Column("decision", sa.String(32)),
    sa.Column("decided_by", sa.String(IDENTITY)),
    _ts("decided_at", nullable=True),
    _ts("created_at"),
    _ts("updated_at"),
    cascade_to("thread_id", "agent_threads.id"),
    index("agent_tool_calls", "thread_id", "status"),
    **MYSQL_OPTIONS,
)

token_usage = sa.Table(
    "agent_token_usage",
    metadata,
    sa.Column("id", AutoId, primary_key=True, autoincrement=True),
    sa.Column("actor", sa.String(IDENTITY)),
    # Governance's dimensions besides actor and model (``lunora_jobs.governance``; revision 0007).
    sa.Column("tenant", sa.String(IDENTITY)),
    sa.Column("agent", sa.String(IDENTITY)),
    sa.Column("model", sa.String(IDENTITY)),
    sa.Column("thread_id", sa.String(ID)),
    sa.Column("run_id", sa.String(ID)),
    sa.Column("step", sa.String(IDENTITY)),
    _count("input_tokens"),
    _count("output_tokens"),
    _count("cache_read_tokens"),
    _count("cache_write_tokens"),
    # Filled on write (``lunora_jobs.pricing``): the provider's figure, else the estimate at the price in
    # force then, else NULL with cost_source "none" -- never 0. DOUBLE: MySQL's FLOAT is single precision.
    sa.Column("cost_usd", sa.Double),
    sa.Column("cost_source", sa.String(16)),
    _ts("created_at"),
    cascade_to("thread_id", "agent_threads.id"),
    index("agent_token_usage", "actor", "created_at"),
    index("agent_token_usage", "thread_id"),
    index("agent_token_usage", "created_at"),
    index("agent_token_usage", "run_id"),
    index("agent_token_usage", "tenant", "created_at"),
    index("agent_token_usage", "agent", "created_at"),
    index("agent_token_usage", "model", "created_at"),
    **MYSQL_OPTIONS,
)

schedules = sa.Table(
    "agent_schedules",
    metadata,
    sa.Column("id", sa.String(ID), primary_key=True),
    sa.Column("agent", sa.String(IDENTITY), nullable=False),
    sa.Column("run_at", sa.BigInteger, nullable=False),
    sa.Column("payload", Payload),
    sa.Column("status", sa.String(32), nullable=False, server_default="pending"),
    sa.Column("claimed_by", sa.String(IDENTITY)),
    _ts("claimed_at", nullable=True),
    _ts("created_at"),
    # ``run_at`` is when the row is next claimable: its due time while pending, its lease's expiry
    # while claimed (so one index range finds both due rows and rows whose claimer died);
    # ``due_at`` is the occurrence's own time, which the fired run's id derives from.
    sa.Column("kind", sa.String(16), nullable=False, server_default="once"),
    _ts("due_at", nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("run_id", sa.String(ID)),
    _ts("fired_at", nullable=True),
    sa.Column("last_error", Payload),
    index("agent_schedules", "status", "run_at"),
    **MYSQL_OPTIONS,
)

entities = sa.Table(
    "agent_entities",
    metadata,
    sa.Column("id", sa.String(ID), primary_key=True),
    sa.Column("owner", sa.String(IDENTITY), nullable=False),
    sa.Column("name", sa.String(IDENTITY), nullable=False),
    sa.Column("normalized", sa.String(IDENTITY), nullable=False),
    sa.Column("type", sa.String(64)),
    sa.Column("weight", sa.Float, nullable=False, server_default="1"),
    _ts("updated_at"),
    index("agent_entities", "owner", "normalized", unique=True),
    **MYSQL_OPTIONS,
)

edges = sa.Table(
    "agent_edges",
    metadata,
    sa.Column("id", AutoId, primary_key=True, autoincrement=True),
    sa.Column("owner", sa.String(IDENTITY), nullable=False),
    sa.Column("src", sa.String(ID), nullable=False),
    sa.Column("relation", sa.String(ID), nullable=False),
    sa.Column("dst", sa.String(ID), nullable=False),
    sa.Column("weight", sa.Float, nullable=False, server_default="1"),
    _ts("updated_at"),
    index("agent_edges", "owner", "src", "relation", "dst", unique=True),
    index("agent_edges", "owner", "dst"),
    **MYSQL_OPTIONS,
)

episodes = sa.Table(
    "agent_episodes",
    metadata,
    sa.Column("id", sa.String(ID), primary_key=True),
    sa.Column("owner", sa.String(IDENTITY)),
    sa.Column("run_id", sa.String(ID), nullable=False),
    sa.Column("summary", Payload, nullable=False),
    _ts("created_at"),
    index("agent_episodes", "run_id", unique=True),
    index("agent_episodes", "owner", "created_at"),
    **MYSQL_OPTIONS,
)

# Model prices, USD per 1M tokens, one row per model and start: the price in force at a time is the
# row with the latest ``effective_from`` at or before it (``lunora_jobs.pricing``). DOUBLE, not
# FLOAT: MySQL's FLOAT is single precision.
pricing = sa.Table(
    "agent_pricing",
    metadata,
    sa.Column("model", sa.String(IDENTITY), primary_key=True),
    # The default lets auto-provisioning add the column to a pre-0004 table (its key stays ``model``
    # until ``lunora db upgrade`` re-keys it).
    sa.Column("effective_from", sa.BigInteger, primary_key=True, autoincrement=False, server_default="0"),
    sa.Column("input_per_mtok", sa.Double, nullable=False),
    sa.Column("cached_input_per_mtok", sa.Double),
    sa.Column("output_per_mtok", sa.Double, nullable=False),
    _ts("updated_at"),
    **MYSQL_OPTIONS,
)

# -- agent_action_proposals: defined below by the proposals work (leave this marker in place) --

# Independent action proposals (``lunora_jobs.store.proposals``): an immutable input/card snapshot,
# the decision audit and a fenced execution lease in one row. ``due_at`` is the discovery time
# (decided_at while queued, lease_expires_at while executing, NULL otherwise), so a worker finds
# queued work and expired leases with one range read on ``(status, due_at)``; ``version`` fences
# every conditional UPDATE so racing writers cannot both win.
action_proposals = sa.Table(
    "agent_action_proposals",
    metadata,
    sa.Column("id", sa.String(ID), primary_key=True),
    sa.Column("tenant_ref", sa.String(IDENTITY)),
    sa.Column("actor_ref", sa.String(IDENTITY), nullable=False),
    sa.Column("thread_id", sa.String(IDENTITY), nullable=False),
    sa.Column("run_id", sa.String(IDENTITY)),
    sa.Column("call_id", sa.String(IDENTITY), nullable=False),
    sa.Column("tool_name", sa.String(IDENTITY), nullable=False),
    sa.Column("input", Payload, nullable=False),
    sa.Column("card", Payload),
    sa.Column("idempotency_key", sa.String(IDENTITY), nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("decision", sa.String(32)),
    sa.Column("decided_by", sa.String(IDENTITY)),
    sa.Column("decision_reason", Payload),
    _ts("decided_at", nullable=True),
    _ts("expires_at", nullable=True),
    sa.Column("lease_owner", sa.String(IDENTITY)),
    sa.Column("lease_token", sa.String(64)),
    _ts("lease_expires_at", nullable=True),
    _ts("due_at", nullable=True),
    _count("generation"),
    sa.Column("result", Payload),
    sa.Column("error", Payload),
    _ts("settled_at", nullable=True),
    sa.Column("version", sa.BigInteger, nullable=False, server_default="1"),
    _ts("created_at"),
    _ts("updated_at"),
    cascade_to("thread_id", "agent_threads.id"),
    index("agent_action_proposals", "thread_id", "actor_ref", "created_at"),
    index("agent_action_proposals", "status", "due_at"),
    index("agent_action_proposals", "status", "expires_at"),
    **MYSQL_OPTIONS,
)

# -- agent_run_queue: runs waiting for their thread (on_concurrent_run="queue"; see sql/_run_queue) --

# ``seq`` is the arrival order (an autoincrement, so two processes enqueueing in the same
# millisecond still get a total order); a run is queued at most once.
run_queue = sa.Table(
    "agent_run_queue",
    metadata,
    sa.Column("seq", AutoId, primary_key=True, autoincrement=True),
    sa.Column("thread_id", sa.String(ID), nullable=False),
    sa.Column("run_id", sa.String(ID), nullable=False),
    _ts("created_at"),
    cascade_to("thread_id", "agent_threads.id"),
    index("agent_run_queue", "run_id", unique=True),
    index("agent_run_queue", "thread_id", "seq"),
    **MYSQL_OPTIONS,
)

# -- agent_inbound: one row per verified inbound delivery (channels' dedupe and reply ledger) --

# ``key`` is the SHA-256 (hex) of the channel's dedupe key (``slack:<team>:<event_id>``,
# ``github:<delivery>``, ``discord:<interaction>``, ``email:<owner>:<message id>``): every retry or
# redelivery maps to the same row, so the primary key alone lets one delivery start the run, across
# ingress replicas. ``status``: ``claimed`` (a start in progress, or one that died: re-claimable once
# ``updated_at`` is stale) or ``started``. ``reply``: where the run's answer goes (JSON), and
# ``reply_status`` ``pending`` until the reply step finished (``done``), or ``none``.
inbound = sa.Table(
    "agent_inbound",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("channel", sa.String(32), nullable=False),
    sa.Column("agent", sa.String(IDENTITY), nullable=False),
    sa.Column("run_id", sa.String(ID), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reply", Payload),
    sa.Column("reply_status", sa.String(16), nullable=False),
    _ts("created_at"),
    _ts("updated_at"),
    index("agent_inbound", "run_id", unique=True),
    index("agent_inbound", "reply_status", "updated_at"),
    **MYSQL_OPTIONS,
)

# -- agent_outbox: a run's first dispatch, written in the run's own transaction (engine/outbox.py) --

# The start sends these rows to the broker right after its commit and deletes them once sent; a row
# left behind (the broker was down, the process died) is sent by the sweep, for its ``agent``'s app
# only, oldest first. The step ledger dedupes a row sent twice.
outbox = sa.Table(
    "agent_outbox",
    metadata,
    sa.Column("run_id", sa.String(ID), primary_key=True),
    sa.Column("step", sa.String(IDENTITY), primary_key=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("agent", sa.String(IDENTITY), nullable=False),
    _ts("created_at"),
    cascade_to("run_id", "agent_runs.id"),
    index("agent_outbox", "agent", "created_at"),
    **MYSQL_OPTIONS,
)

# -- agent_declarations: which agents a live worker serves (engine/registry.py) --

# One row per agent name: every worker process that loads an app declaring the agent, and every sweep
# pass of such an app, moves ``seen_at`` forward. A running run nobody claimed whose agent no row names
# as seen lately belongs to no worker: the sweep fails it with ``UnknownAgentError``.
declarations = sa.Table(
    "agent_declarations",
    metadata,
    sa.Column("agent", sa.String(IDENTITY), primary_key=True),
    _ts("seen_at"),
    **MYSQL_OPTIONS,
)
