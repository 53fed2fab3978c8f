"""Hot-path statements for PostgreSQL as SQL text (``%(name)s`` parameters, psycopg's style).

Text, not SQLAlchemy constructs, for two reasons: psycopg's pipeline mode (``pipeline``) sends
text, and a statement run on every step should not pay SQLAlchemy's statement building and cache
lookup (~0.3 ms a call on a busy 2-core machine). Each one mirrors a Core query of the store; the
contract suite runs both forms (PostgreSQL uses these, the other dialects the Core ones).
"""

from __future__ import annotations

from lunora_jobs.store.schema import threads

LEDGER_SQL = "SELECT * FROM agent_steps WHERE run_id = %(run_id)s ORDER BY created_at, name"
"""``list_steps`` as SQL text (the pipeline sends text; same order as ``list_steps``)."""

LEDGER_NAMES_SQL = (
    "SELECT * FROM agent_steps WHERE run_id = %(run_id)s AND name = ANY(%(names)s::varchar[])"
    " ORDER BY created_at, name"
)
"""The rows of ``list_steps`` named ``names`` (one index probe each on ``(run_id, name)``)."""

_THREAD_COLUMNS = tuple(column.name for column in threads.c)
ENSURE_THREAD_SQL = (
    f"WITH ins AS (INSERT INTO agent_threads ({', '.join(_THREAD_COLUMNS)})"
    f" VALUES ({', '.join(f'%({c})s' for c in _THREAD_COLUMNS)}) ON CONFLICT (key) DO NOTHING RETURNING *)"
    " SELECT * FROM ins UNION ALL"
    " SELECT * FROM agent_threads WHERE key = %(key)s AND NOT EXISTS (SELECT 1 FROM ins)"
)
"""``ensure_thread``'s get-or-create in one round trip: the new thread, or the stored one. No row when
a concurrent start created it after this statement's snapshot (the caller reads it then)."""

ACQUIRE_THREAD_SQL = (
    "UPDATE agent_threads SET active_run_id = %(run_id)s, updated_at = %(now)s WHERE id = %(thread_id)s"
    " AND (active_run_id IS NULL OR active_run_id = %(run_id)s) RETURNING 1"
)
"""``acquire_thread``'s compare-and-set of the active-run slot: a row back means taken."""

CLEAR_OUTBOX_SQL = (
    "DELETE FROM agent_outbox WHERE (run_id, step) IN"
    " (SELECT * FROM unnest(%(run_ids)s::varchar[], %(steps)s::varchar[])) RETURNING 1"
)
"""``clear_outbox``: the rows named by the (run_id, step) pairs; one row back per row deleted."""

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
"""``claim_step``'s upsert (see ``_steps``): a row back means claimed, none means explain why."""

_CLAIMABLE_RUN = (
    "EXISTS (SELECT 1 FROM agent_runs WHERE id = %(run_id)s"
    " AND status NOT IN ('completed', 'failed', 'cancelled') AND turns >= %(turn)s"
    " AND agent = ANY(%(agents)s::varchar[]))"
)

TURN_CLAIM_SQL = (
    "INSERT INTO agent_steps (run_id, name, status, result, error, attempt, generation, lease_owner,"
    " lease_expires_at, created_at, updated_at) SELECT %(run_id)s::varchar, %(name)s::varchar, 'running',"
    " NULL, NULL, 1, 1, %(owner)s::varchar, %(expires)s::bigint, %(now)s::bigint, %(now)s::bigint"
    f" WHERE {_CLAIMABLE_RUN}"
    " ON CONFLICT (run_id, name) DO UPDATE SET"
    " attempt = agent_steps.attempt + 1, generation = agent_steps.generation + 1,"
    " lease_owner = %(owner)s, lease_expires_at = %(expires)s, updated_at = %(now)s"
    " WHERE agent_steps.status = 'running' AND agent_steps.lease_expires_at <= %(now)s"
    f" AND agent_steps.attempt < %(max_attempts)s AND {_CLAIMABLE_RUN} RETURNING *"
)
"""``CLAIM_SQL`` for ``llm:turn:<turn>``, taken only when the engine would claim it after reading the
run: the run is not terminal, has completed ``turn`` turns, and belongs to one of ``agents`` (those
whose lease and ``max_attempts`` the caller passed). No row back: the caller explains the plain way."""

# The turn's row is fetched by a LATERAL subquery with LIMIT 1, which the planner neither flattens
# nor pushes the JSON tests into: a (run_id, name) probe of the primary key, then the JSON tests on
# that one row. Joined to the run instead, the planner probed by run_id alone and tested every ledger
# row of the run (each row's result parsed as jsonb): a tool claim that grew with the run's length.
# The subquery also parses the memo once for both tests: a cast per test read it from TOAST and
# parsed it again (the casts alone, for a 10 KB memo: ~125 us against ~45 us).
_CLAIMABLE_CALL = (
    "EXISTS (SELECT 1 FROM agent_runs r CROSS JOIN LATERAL (SELECT t.status, t.result::jsonb AS memo"
    " FROM agent_steps t WHERE t.run_id = r.id AND t.name = 'llm:turn:' || (r.turns - 1)::text LIMIT 1) t"
    " WHERE r.id = %(run_id)s AND r.status NOT IN ('completed', 'failed', 'cancelled') AND r.turns > 0"
    " AND r.agent = ANY(%(agents)s::varchar[]) AND t.status = 'completed'"
    " AND (t.memo -> 'turn' -> 'tool_calls')"
    " @> jsonb_build_array(jsonb_build_object('id', %(call_id)s::text))"
    " AND NOT COALESCE((t.memo -> 'approvals') ? %(call_id)s::text, false))"
)

TOOL_CLAIM_SQL = (
    "INSERT INTO agent_steps (run_id, name, status, result, error, attempt, generation, lease_owner,"
    " lease_expires_at, created_at, updated_at) SELECT %(run_id)s::varchar, %(name)s::varchar, 'running',"
    " NULL, NULL, 1, 1, %(owner)s::varchar, %(expires)s::bigint, %(now)s::bigint, %(now)s::bigint"
    f" WHERE {_CLAIMABLE_CALL}"
    " ON CONFLICT (run_id, name) DO UPDATE SET"
    " attempt = agent_steps.attempt + 1, generation = agent_steps.generation + 1,"
    " lease_owner = %(owner)s, lease_expires_at = %(expires)s, updated_at = %(now)s"
    " WHERE agent_steps.status = 'running' AND agent_steps.lease_expires_at <= %(now)s"
    f" AND agent_steps.attempt < %(max_attempts)s AND {_CLAIMABLE_CALL} RETURNING *"
)
"""``CLAIM_SQL`` for ``tool:<name>:<call_id>``, taken only when the engine would claim it after its
reads: the run is not terminal and belongs to one of ``agents``, and its latest turn completed with
call ``call_id``, not gated by an approval (a gated call needs its decision read: the plain path)."""

TURN_READ_CLAIM_SQL = (
    f"WITH claimed AS ({TURN_CLAIM_SQL})"
    " SELECT (SELECT row_to_json(r) FROM agent_runs r WHERE r.id = %(run_id)s) AS run,"
    " (SELECT row_to_json(c) FROM claimed c) AS claim,"
    " (SELECT json_agg(m ORDER BY m.seq) FROM agent_messages m WHERE EXISTS (SELECT 1 FROM claimed)"
    " AND m.thread_id = (SELECT thread_id FROM agent_runs WHERE id = %(run_id)s)) AS history"
)
"""A turn's run read, ``TURN_CLAIM_SQL`` and (when it claimed) the thread history as ONE statement
returning one row of three JSON values: one statement instead of three in the pipeline saves the
driver's per-statement Python (~0.1 ms each), and the JSON is decoded in C. The run and the claim's
condition read one snapshot; the history holds every message committed before the claim."""


def tool_read_claim_sql(read_sql: str) -> str:
    """``read_sql`` (the run with its latest turn's row, one row) and ``TOOL_CLAIM_SQL`` as ONE
    statement returning the read's row and the claimed row as two JSON values (see
    ``TURN_READ_CLAIM_SQL``)."""
    return (f"WITH claimed AS ({TOOL_CLAIM_SQL})"
            f" SELECT (SELECT row_to_json(x) FROM ({read_sql}) x) AS read,"
            " (SELECT row_to_json(c) FROM claimed c) AS claim")
