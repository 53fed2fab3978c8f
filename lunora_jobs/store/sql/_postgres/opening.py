"""A run's start on PostgreSQL as ONE statement: ``create_run`` with its ``RunOpening`` in one round
trip (the portable transaction is six: BEGIN, the run, the thread, the message, the outbox, COMMIT).

    WITH run_row AS (INSERT INTO agent_runs ... ON CONFLICT (id) DO NOTHING RETURNING *),
         thr     AS (UPDATE agent_threads SET next_seq = next_seq + 1, status = ..., updated_at = ...
                     WHERE id = :thread_id AND EXISTS (SELECT FROM run_row) RETURNING id, next_seq),
         msg     AS (INSERT INTO agent_messages SELECT ..., thr.next_seq, ... FROM thr
                     ON CONFLICT (thread_id, key) DO NOTHING),
         box     AS (INSERT INTO agent_outbox SELECT ... FROM run_row, json_to_recordset(:outbox)
                     ON CONFLICT DO NOTHING),
         queued  AS (INSERT INTO agent_run_queue SELECT ... FROM run_row ON CONFLICT DO NOTHING)
    SELECT * FROM run_row

Every write hangs off ``run_row``: a start replayed with the id of a run that exists writes nothing
(the portable form also bumps the thread's counter then, leaving a gap in its seqs) and returns no
row; the caller reads the stored run. The foreign keys of the outbox and the messages are checked at
the end of the statement, so they see the run and the thread it just wrote; an unknown thread is
the foreign-key violation of the run's insert, as in the portable form.

The SQL depends only on the opening's shape (a message or not, a thread status or not, outbox rows
or not, a queue row or not), so it is built once per shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from lunora_jobs.store.records import RunOpening
from lunora_jobs.store.schema import runs
from lunora_jobs.store.sql._postgres.completion import MESSAGE_COLUMNS
from lunora_jobs.store.sql._rows import message_rows

_RUN_COLUMNS = tuple(column.name for column in runs.c)
_MESSAGE_COLUMNS = tuple(column for column, _ in MESSAGE_COLUMNS)  # + thread_id, seq, created_at below

Shape = tuple[bool, bool, bool, bool]


def opening_sql(row: Mapping[str, Any], opening: RunOpening, now: int) -> tuple[str, dict[str, Any]]:
    """The statement and its parameters for the run ``row`` (every ``agent_runs`` column) and
    ``opening``; it returns the new run's row, or none when a run with that id exists."""
    params: dict[str, Any] = {f"r_{column}": row[column] for column in _RUN_COLUMNS}
    params["now"] = now
    if opening.thread_status is not None:
        params["thread_status"] = opening.thread_status
    if opening.message is not None:
        (message,) = message_rows("", [opening.message], 0, now)
        params.update({f"m_{column}": message[column] for column in _MESSAGE_COLUMNS})
    if opening.outbox:
        params["outbox"] = json.dumps(
            [{"run_id": e.run_id, "step": e.step, "kind": e.kind, "agent": e.agent} for e in opening.outbox]
        )
    shape: Shape = (opening.message is not None, opening.thread_status is not None, bool(opening.outbox),
                    opening.enqueue)
    return _sql(shape), params


@cache
def _sql(shape: Shape) -> str:
    has_message, has_status, has_outbox, enqueue = shape
    columns = ", ".join(_RUN_COLUMNS)
    values = ", ".join(f"%(r_{column})s" for column in _RUN_COLUMNS)
    parts = [
        f"WITH run_row AS (INSERT INTO agent_runs ({columns}) VALUES ({values})"
        " ON CONFLICT (id) DO NOTHING RETURNING *)"
    ]
    if has_message or has_status:
        sets = ["updated_at = %(now)s"]
        if has_message:
            sets.append("next_seq = next_seq + 1")
        if has_status:
            sets.append("status = %(thread_status)s")
        parts.append(
            f"thr AS (UPDATE agent_threads SET {', '.join(sets)}"
            " WHERE id = %(r_thread_id)s AND EXISTS (SELECT 1 FROM run_row) RETURNING id, next_seq)"
        )
    if has_message:
        values = ", ".join(f"%(m_{column})s" for column in _MESSAGE_COLUMNS)
        parts.append(
            f"msg AS (INSERT INTO agent_messages ({', '.join(_MESSAGE_COLUMNS)}, thread_id, seq, created_at)"
            f" SELECT {values}, thr.id, thr.next_seq, %(now)s FROM thr"
            " ON CONFLICT (thread_id, key) DO NOTHING)"
        )
    if has_outbox:
        parts.append(
            "box AS (INSERT INTO agent_outbox (run_id, step, kind, agent, created_at)"
            " SELECT v.run_id, v.step, v.kind, v.agent, %(now)s FROM run_row CROSS JOIN"
            " json_to_recordset(%(outbox)s::json) AS v(run_id text, step text, kind text, agent text)"
            " ON CONFLICT (run_id, step) DO NOTHING)"
        )
    if enqueue:
        parts.append(
            "queued AS (INSERT INTO agent_run_queue (thread_id, run_id, created_at)"
            " SELECT run_row.thread_id, run_row.id, %(now)s FROM run_row ON CONFLICT (run_id) DO NOTHING)"
        )
    return ",\n".join(parts) + "\nSELECT * FROM run_row"
