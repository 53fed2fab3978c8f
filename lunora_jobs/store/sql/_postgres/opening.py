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

``free_thread_opening_sql`` goes one step further for a start on a thread that is free: the thread's
get-or-create (``ensure_thread``) and the taking of its active-run slot (``acquire_thread``) join the
same statement, as an upsert whose update is conditioned on the slot being free::

    WITH thr     AS (INSERT INTO agent_threads ... VALUES (..., active_run_id = :run, status, next_seq)
                     ON CONFLICT (key) DO UPDATE SET active_run_id = :run, next_seq = next_seq + 1, ...
                     WHERE <no active run, no queued run, owner IS NOT DISTINCT FROM :owner>
                     RETURNING *),
         run_row AS (INSERT INTO agent_runs SELECT ..., thr.id, ... FROM thr RETURNING *),
         msg, box  (as above)
    SELECT * FROM thr

A new thread is inserted already held by the run (a statement's CTEs cannot update a row another
of them inserted). When the update's condition fails (a run in flight or queued, another owner) the
row is only locked, nothing is written, and no row comes back: the caller starts the plain way,
which explains or queues.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from lunora_jobs.store.records import RunOpening
from lunora_jobs.store.schema import runs, threads
from lunora_jobs.store.sql._postgres.completion import MESSAGE_COLUMNS
from lunora_jobs.store.sql._rows import message_rows

_RUN_COLUMNS = tuple(column.name for column in runs.c)
_THREAD_COLUMNS = tuple(column.name for column in threads.c)
_MESSAGE_COLUMNS = tuple(column for column, _ in MESSAGE_COLUMNS)  # + thread_id, seq, created_at below

Shape = tuple[bool, bool, bool, bool]


def opening_sql(row: Mapping[str, Any], opening: RunOpening, now: int) -> tuple[str, dict[str, Any]]:
    """The statement and its parameters for the run ``row`` (every ``agent_runs`` column) and
    ``opening``; it returns the new run's row, or none when a run with that id exists."""
    params = _params(row, opening, now)
    shape: Shape = (opening.message is not None, opening.thread_status is not None, bool(opening.outbox),
                    opening.enqueue)
    return _sql(shape), params


def free_thread_opening_sql(
    thread_row: Mapping[str, Any], row: Mapping[str, Any], opening: RunOpening, now: int
) -> tuple[str, dict[str, Any]]:
    """The statement and its parameters that get-or-create the thread ``thread_row`` (every
    ``agent_threads`` column, as ``ensure_thread`` inserts it), take its slot for the run ``row``
    (whose ``thread_id`` is not used: the thread's own id is) and write the run with ``opening``; it
    returns the thread's row as written, or none when the thread is not free (nothing written).
    ``opening.enqueue`` must be False: a queued run does not take the slot."""
    if opening.enqueue:
        raise ValueError("a queued run does not take its thread's slot; use opening_sql")
    params = _params(row, opening, now)
    params.update({f"t_{column}": thread_row[column] for column in _THREAD_COLUMNS})
    # The new thread is written as the update leaves an existing one: held, its status, its seq.
    params["t_active_run_id"] = row["id"]
    params["t_next_seq"] = 1 if opening.message is not None else 0
    params["t_status"] = opening.thread_status or thread_row["status"]
    return _free_thread_sql((opening.message is not None, opening.thread_status is not None,
                             bool(opening.outbox))), params


def _params(row: Mapping[str, Any], opening: RunOpening, now: int) -> dict[str, Any]:
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
    return params


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
    parts += _message_and_outbox(has_message, has_outbox)
    if enqueue:
        parts.append(
            "queued AS (INSERT INTO agent_run_queue (thread_id, run_id, created_at)"
            " SELECT run_row.thread_id, run_row.id, %(now)s FROM run_row ON CONFLICT (run_id) DO NOTHING)"
        )
    return ",\n".join(parts) + "\nSELECT * FROM run_row"


@cache
def _free_thread_sql(shape: tuple[bool, bool, bool]) -> str:
    has_message, has_status, has_outbox = shape
    sets = ["active_run_id = %(r_id)s", "updated_at = %(now)s"]
    if has_message:
        sets.append("next_seq = agent_threads.next_seq + 1")
    if has_status:
        sets.append("status = %(thread_status)s")
    run_values = ", ".join("thr.id" if c == "thread_id" else f"%(r_{c})s" for c in _RUN_COLUMNS)
    parts = [
        f"WITH thr AS (INSERT INTO agent_threads ({', '.join(_THREAD_COLUMNS)})"
        f" VALUES ({', '.join(f'%(t_{column})s' for column in _THREAD_COLUMNS)})"
        f" ON CONFLICT (key) DO UPDATE SET {', '.join(sets)}"
        # What ``admit`` and the owner checks of ``start_run`` would let through at once; anything
        # else (a run in flight or queued, an owner to check or to explain) goes the plain way.
        " WHERE agent_threads.active_run_id IS NULL AND agent_threads.owner IS NOT DISTINCT FROM %(r_owner)s"
        " AND NOT EXISTS (SELECT 1 FROM agent_run_queue q WHERE q.thread_id = agent_threads.id)"
        " RETURNING *)",
        f"run_row AS (INSERT INTO agent_runs ({', '.join(_RUN_COLUMNS)}) SELECT {run_values} FROM thr"
        " RETURNING *)",
    ]
    parts += _message_and_outbox(has_message, has_outbox)
    return ",\n".join(parts) + "\nSELECT * FROM thr"


def _message_and_outbox(has_message: bool, has_outbox: bool) -> list[str]:
    """The user message (at the thread's new ``next_seq``, from ``thr``) and the outbox rows (hung off
    ``run_row``) of an opening."""
    parts = []
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
    return parts
