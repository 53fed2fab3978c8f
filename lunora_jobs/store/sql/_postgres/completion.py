"""A step completion on PostgreSQL as ONE statement (one round trip, atomic, no BEGIN/COMMIT).

The five writes of a completion become data-modifying CTEs of a single statement::

    WITH run_row AS (SELECT id, thread_id FROM agent_runs
                     WHERE id = :run AND status <> 'cancelled' FOR UPDATE),
         done    AS (UPDATE agent_steps SET status = 'completed', ...
                     WHERE <fenced: run, name, running claim's generation> AND EXISTS (SELECT FROM run_row)
                     RETURNING run_id),
         thr     AS (UPDATE agent_threads SET next_seq = next_seq + n, <patch>
                     WHERE id = (SELECT thread_id FROM run_row) AND EXISTS (SELECT FROM done)
                     RETURNING id, next_seq),
         msg     AS (INSERT INTO agent_messages SELECT ..., thr.next_seq - n + v.i, ...
                     FROM thr, json_to_recordset(:messages) v ON CONFLICT (thread_id, key) DO NOTHING),
         usage   AS (INSERT INTO agent_token_usage SELECT ... FROM done, run_row),
         upd     AS (UPDATE agent_runs SET <patch> WHERE id = :run AND EXISTS (SELECT FROM done))
    SELECT count(*) FROM done

Every write hangs off ``done``, so a fenced-out completion writes nothing. The run row is locked
first: a concurrent ``cancel`` either committed before (no ``run_row``, nothing written) or waits
for this statement to commit — a cancelled run never gets a result, and every completion locks in
the same order (run, step, thread). A single statement is atomic by itself.

The SQL text depends only on the completion's *shape* (which patches, messages or not, usage or
not), never on its values or its number of messages (they travel as one JSON document), so it is built once
per shape and cached here, and the server's prepared statement is reused from the 6th step on.
Building it with SQLAlchemy Core instead cost ~4 ms of Python per step (uncacheable VALUES).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from lunora_jobs.store._codec import RUN_ADD, RUN_JSON, RUN_SET, dump, split_patch
from lunora_jobs.store.records import NewMessage
from lunora_jobs.store.sql._rows import message_rows

MESSAGE_COLUMNS = (
    ("id", "text"), ("key", "text"), ("role", "text"), ("content", "text"), ("run_id", "text"),
    ("tool_calls", "text"), ("tool_call_id", "text"), ("name", "text"), ("metadata", "text"),
)
_USAGE_CASTS = {
    "actor": "varchar", "tenant": "varchar", "agent": "varchar", "model": "varchar", "run_id": "varchar",
    "step": "varchar",
    "input_tokens": "bigint", "output_tokens": "bigint", "cache_read_tokens": "bigint",
    "cache_write_tokens": "bigint", "cost_usd": "double precision", "cost_source": "varchar",
    "created_at": "bigint",
}

Shape = tuple[bool, tuple[str, ...], tuple[str, ...], bool, bool, tuple[str, ...], tuple[str, ...]]


def completion_sql(
    run_id: str,
    name: str,
    generation: int,
    now: int,
    result: str | None,
    batch: Sequence[NewMessage],
    thread_sets: Mapping[str, Any] | None,
    thread_adds: Mapping[str, int],
    usage: Mapping[str, Any] | None,
    run_patch: Mapping[str, Any] | None,
) -> tuple[str, dict[str, Any]]:
    """The statement and its parameters; it returns one row: 1 (recorded) or 0 (fenced out / cancelled).

    ``thread_sets`` None leaves the thread alone (``batch`` must then be empty); ``thread_adds``
    maps thread columns to increments; ``usage`` is a ``token_usage`` row whose None ``thread_id``
    means the run's thread; ``run_patch`` is a run patch as ``update_run`` takes it.
    """
    params: dict[str, Any] = {
        "run_id": run_id, "name": name, "generation": generation, "now": now, "result": result,
    }
    r_sets, r_adds = split_patch(run_patch or {}, RUN_SET, RUN_ADD, "run")
    # As in ``run_values`` / ``_bump_thread``: an increment of a column wins over a plain set of it.
    r_sets = {c: v for c, v in r_sets.items() if c not in r_adds}
    if thread_sets is not None:
        thread_sets = {c: v for c, v in thread_sets.items() if c not in thread_adds}
    for column, value in r_sets.items():
        params[f"r_{column}"] = dump(value) if column in RUN_JSON else value
    params.update({f"ra_{column}": amount for column, amount in r_adds.items()})
    touch_thread = thread_sets is not None
    for column, value in (thread_sets or {}).items():
        params[f"t_{column}"] = value
    params.update({f"ta_{column}": amount for column, amount in thread_adds.items()})
    if batch:
        params["n"] = len(batch)
        rows = message_rows("", batch, 1, now)  # "seq" is the 1-based position in the batch here
        # One JSON document, not an array per column: psycopg dumps a list parameter in Python,
        # element by element (~0.2 ms per completion); the document is encoded in C.
        params["m"] = dump(
            [{"i": row["seq"], **{column: row[column] for column, _ in MESSAGE_COLUMNS}} for row in rows])
    if usage is not None:
        params.update({f"u_{column}": value for column, value in usage.items()})
    shape: Shape = (
        touch_thread, tuple(sorted(thread_sets or {})), tuple(sorted(thread_adds)), bool(batch),
        usage is not None, tuple(sorted(r_sets)), tuple(sorted(r_adds)),
    )
    return _sql(shape), params


@cache
def _sql(shape: Shape) -> str:
    touch_thread, t_sets, t_adds, has_messages, has_usage, r_sets, r_adds = shape
    # The fence tests the running claim's generation through CASE, which no index serves, so the
    # step is found by its primary key: with ``status = 'running'`` as a condition of its own, the
    # generic plan took the (status, lease) index and read every running step of every run, and the
    # dead entries of those since the last vacuum (300 running: 0.05-0.3 ms more per completion).
    parts = [
        "WITH run_row AS (SELECT id, thread_id FROM agent_runs"
        " WHERE id = %(run_id)s AND status <> 'cancelled' FOR UPDATE)",
        "done AS (UPDATE agent_steps SET status = 'completed', result = %(result)s, error = NULL,"
        " updated_at = %(now)s WHERE run_id = %(run_id)s AND name = %(name)s"
        " AND CASE WHEN status = 'running' THEN generation END = %(generation)s"
        " AND EXISTS (SELECT 1 FROM run_row)"
        " RETURNING run_id)",
    ]
    if touch_thread:
        sets = ["updated_at = %(now)s"]
        if has_messages:
            sets.append("next_seq = next_seq + %(n)s")
        sets += [f"{c} = %(t_{c})s" for c in t_sets] + [f"{c} = {c} + %(ta_{c})s" for c in t_adds]
        parts.append(
            f"thr AS (UPDATE agent_threads SET {', '.join(sets)}"
            " WHERE id = (SELECT thread_id FROM run_row) AND EXISTS (SELECT 1 FROM done)"
            " RETURNING id, next_seq)"
        )
        if has_messages:
            record = ", ".join(f"{c} {t}" for c, t in MESSAGE_COLUMNS)
            parts.append(
                "msg AS (INSERT INTO agent_messages (id, thread_id, key, seq, role, content, run_id,"
                " tool_calls, tool_call_id, name, metadata, created_at)"
                " SELECT v.id, thr.id, v.key, thr.next_seq - %(n)s + v.i, v.role, v.content, v.run_id,"
                " v.tool_calls, v.tool_call_id, v.name, v.metadata, %(now)s"
                f" FROM thr CROSS JOIN json_to_recordset(%(m)s::json) AS v(i bigint, {record})"
                " ON CONFLICT (thread_id, key) DO NOTHING)"
            )
    if has_usage:
        columns = list(_USAGE_CASTS)
        values = ", ".join(f"%(u_{c})s::{_USAGE_CASTS[c]}" for c in columns)
        parts.append(
            f"usage AS (INSERT INTO agent_token_usage ({', '.join(columns)}, thread_id)"
            f" SELECT {values}, COALESCE(%(u_thread_id)s::varchar, run_row.thread_id)"
            " FROM done CROSS JOIN run_row)"
        )
    if r_sets or r_adds:
        sets = ["updated_at = %(now)s"]
        sets += [f"{c} = %(r_{c})s" for c in r_sets] + [f"{c} = {c} + %(ra_{c})s" for c in r_adds]
        parts.append(
            f"upd AS (UPDATE agent_runs SET {', '.join(sets)}"
            " WHERE id = %(run_id)s AND EXISTS (SELECT 1 FROM done))"
        )
    return ",\n".join(parts) + "\nSELECT count(*) FROM done"
