"""Retention over SQL: erase one thread everywhere, and purge old finished runs' step ledger in batches.

``erase_thread`` deletes explicitly, child tables first, in one transaction, instead of leaning on the
``ON DELETE CASCADE`` foreign keys: rows that point at the thread only through a run id (the inbound
dedupe ledger, episodic memory, usage rows written without a thread id, delayed runs naming the
thread's key) have no foreign key at all, and the explicit deletes give per-table counts.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.store._codec import load
from lunora_jobs.store.schema import (
    action_proposals,
    episodes,
    inbound,
    messages,
    outbox,
    run_queue,
    runs,
    schedules,
    steps,
    threads,
    token_usage,
    tool_calls,
)
from lunora_jobs.store.sql._base import SqlBase

_CHUNK = 500  # ids per IN (...) list: well under every dialect's bound-parameter limit


def _chunks(ids: Sequence[str]) -> list[Sequence[str]]:
    return [ids[i : i + _CHUNK] for i in range(0, len(ids), _CHUNK)]


def _delete_in(conn: Connection, table: sa.Table, column: str, ids: Sequence[str]) -> int:
    return sum(int(conn.execute(sa.delete(table).where(table.c[column].in_(part))).rowcount)
               for part in _chunks(ids))


def _scheduled_for(conn: Connection, key: str, run_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """(delayed runs to delete, cron rows to unlink): rows naming ``key`` or one of its runs.

    A cron row is the app's code, re-registered on start: it loses its pointer to the erased run,
    not the row. The LIKE (on the key as JSON spells it) only narrows the scan; the decoded payload decides.
    """
    doomed: list[str] = []
    unlink: list[str] = []
    rows = conn.execute(
        sa.select(schedules.c.id, schedules.c.kind, schedules.c.payload, schedules.c.run_id).where(
            sa.or_(schedules.c.payload.contains(json.dumps(key, ensure_ascii=False)[1:-1], autoescape=True),
                   schedules.c.run_id.in_(list(run_ids)))
        )
    ).all()
    wanted = set(run_ids)
    for sid, kind, payload, run_id in rows:
        params = load(payload)
        names_key = isinstance(params, dict) and params.get("thread_key") == key
        if kind != "cron" and (names_key or run_id in wanted):
            doomed.append(sid)
        elif run_id in wanted:
            unlink.append(sid)
    return doomed, unlink


class SqlRetentionMixin(SqlBase):
    """``erase_thread`` and ``purge_ledger`` of ``SqlStore``."""

    def erase_thread(self, key: str) -> dict[str, int] | None:
        """Delete the thread ``key`` and every row that belongs to it; per-table counts, None if absent.

        Owner-scoped memory (``agent_entities`` / ``agent_edges``) is not the thread's and stays;
        episodes are per run and go.
        """

        def work(conn: Connection) -> dict[str, int] | None:
            thread_id = conn.execute(sa.select(threads.c.id).where(threads.c.key == key)).scalar()
            if thread_id is None:
                return None
            run_ids = [str(r) for r in conn.execute(sa.select(runs.c.id).where(runs.c.thread_id == thread_id))
                       .scalars()]
            doomed, unlink = _scheduled_for(conn, key, run_ids)
            for part in _chunks(unlink):
                conn.execute(sa.update(schedules).where(schedules.c.id.in_(part)).values(run_id=None))
            counts = {
                "agent_steps": _delete_in(conn, steps, "run_id", run_ids),
                "agent_outbox": _delete_in(conn, outbox, "run_id", run_ids),
                "agent_inbound": _delete_in(conn, inbound, "run_id", run_ids),
                "agent_episodes": _delete_in(conn, episodes, "run_id", run_ids),
                "agent_schedules": _delete_in(conn, schedules, "id", doomed),
                "agent_token_usage": _delete_in(conn, token_usage, "run_id", run_ids),
            }
            by_thread: list[tuple[sa.Table, str]] = [
                (token_usage, "thread_id"), (tool_calls, "thread_id"), (action_proposals, "thread_id"),
                (run_queue, "thread_id"), (messages, "thread_id"), (runs, "thread_id"), (threads, "id"),
            ]
            for table, column in by_thread:
                gone = int(conn.execute(sa.delete(table).where(table.c[column] == thread_id)).rowcount)
                counts[table.name] = counts.get(table.name, 0) + gone
            return counts

        return self._write(work)

    def purge_ledger(self, before_ms: int, limit: int, statuses: Collection[str]) -> int:
        """Delete up to ``limit`` step-ledger rows of runs in ``statuses`` last updated before ``before_ms``.

        One bounded batch (call again until it returns less than ``limit``); the runs, their
        transcript, tool calls and usage rows stay.
        """
        if limit <= 0:
            return 0
        old = (
            sa.select(steps.c.run_id, steps.c.name)
            .join(runs, runs.c.id == steps.c.run_id)
            .where(runs.c.status.in_(list(statuses)), runs.c.updated_at < before_ms,
                   steps.c.updated_at < before_ms)
            .limit(limit)
        )

        def work(conn: Connection) -> int:
            batch = conn.execute(old).all()
            by_run: dict[str, list[str]] = {}
            for run_id, name in batch:
                by_run.setdefault(str(run_id), []).append(str(name))
            return sum(
                int(conn.execute(sa.delete(steps).where(steps.c.run_id == run_id, steps.c.name.in_(names)))
                    .rowcount)
                for run_id, names in by_run.items()
            )

        return self._write(work)
