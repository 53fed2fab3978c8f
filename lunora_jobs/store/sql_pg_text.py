"""Hot-path statements for PostgreSQL as SQL text (``%(name)s`` parameters, psycopg's style).

Text, not SQLAlchemy constructs, for two reasons: psycopg's pipeline mode (``sql_pipeline``) sends
text, and a statement run on every step should not pay SQLAlchemy's statement building and cache
lookup (~0.3 ms a call on a busy 2-core machine). Each one mirrors a Core query of the store; the
contract suite runs both forms (PostgreSQL uses these, the other dialects the Core ones).
"""

from __future__ import annotations

LEDGER_SQL = "SELECT * FROM agent_steps WHERE run_id = %(run_id)s ORDER BY created_at, name"
"""``list_steps`` as SQL text (the pipeline sends text; same order as ``list_steps``)."""

HISTORY_SQL = "SELECT * FROM agent_messages WHERE thread_id = %(thread_id)s ORDER BY seq"
"""``load_thread_for_turn(thread_id)`` (every message, oldest first) as SQL text."""

CLAIM_SQL = (
    "INSERT INTO agent_steps (run_id, name, status, result, error, attempt, generation, lease_owner,"
    " lease_expires_at, created_at, updated_at) VALUES (%(run_id)s, %(name)s, 'running', NULL, NULL, 1, 1,"
    " %(owner)s, %(expires)s, %(now)s, %(now)s) ON CONFLICT (run_id, name) DO UPDATE SET"
    " attempt = agent_steps.attempt + 1, generation = agent_steps.generation + 1,"
    " lease_owner = %(owner)s, lease_expires_at = %(expires)s, updated_at = %(now)s"
    " WHERE agent_steps.status = 'running' AND agent_steps.lease_expires_at <= %(now)s"
    " AND agent_steps.attempt < %(max_attempts)s RETURNING *"
)
"""``claim_step``'s upsert (see ``sql_steps``): a row back means claimed, none means explain why."""
