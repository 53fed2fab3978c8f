"""The console's reads over SQL: a message page after a seq, a keyset page of runs, usage per model.

Each is one statement on an index: ``(thread_id, seq)`` for messages, ``(created_at, id)`` — behind
``owner`` / ``status`` / ``agent`` when filtered — for runs, ``run_id`` for the usage ledger. Keyset
pagination (``WHERE (created_at, id) < (:c, :i) ORDER BY created_at DESC, id DESC LIMIT n``) keeps
page 1000 as cheap as page 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from lunora_jobs.store.records import MessageRecord, ModelUsage, RunListing
from lunora_jobs.store.schema import messages, runs, threads, token_usage
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._rows import message_record

_LISTING = (runs.c.id, threads.c.key, runs.c.agent, runs.c.owner, runs.c.status, runs.c.stopped,
            runs.c.turns, runs.c.input_tokens, runs.c.output_tokens, runs.c.created_at, runs.c.updated_at)


class SqlConsoleMixin(SqlBase):
    """Console reads of ``SqlStore``."""

    def list_messages_after(self, thread_id: str, after_seq: int, limit: int) -> list[MessageRecord]:
        """Up to ``limit`` messages with ``seq > after_seq``, by seq."""
        query = (sa.select(messages).where(messages.c.thread_id == thread_id, messages.c.seq > after_seq)
                 .order_by(messages.c.seq).limit(max(limit, 0)))
        return self._query(lambda conn: [message_record(row) for row in conn.execute(query)])

    def page_runs(
        self, *, owner: str | None = None, status: str | None = None, agent: str | None = None,
        thread_id: str | None = None, before: tuple[int, str] | None = None, limit: int = 50,
    ) -> list[RunListing]:
        """Runs newest first, filtered, keyset-paged after ``before`` = (created_at, id)."""
        query = sa.select(*_LISTING).select_from(runs.join(threads, threads.c.id == runs.c.thread_id))
        for column, value in ((runs.c.owner, owner), (runs.c.status, status), (runs.c.agent, agent),
                              (runs.c.thread_id, thread_id)):
            if value is not None:
                query = query.where(column == value)
        if before is not None:
            query = query.where(sa.tuple_(runs.c.created_at, runs.c.id) < sa.tuple_(*before))
        query = query.order_by(runs.c.created_at.desc(), runs.c.id.desc()).limit(max(limit, 0))
        return self._query(lambda conn: [RunListing(*row) for row in conn.execute(query)])

    def usage_by_model(self, run_ids: Sequence[str]) -> list[ModelUsage]:
        """Each run's usage per model (one GROUP BY over the ``run_id`` index)."""
        if not run_ids:
            return []
        u = token_usage.c
        query = (sa.select(u.run_id, u.model, sa.func.sum(u.input_tokens), sa.func.sum(u.output_tokens),
                           sa.func.sum(u.cache_read_tokens), sa.func.sum(u.cache_write_tokens),
                           sa.func.sum(u.cost_usd))
                 .where(u.run_id.in_(list(run_ids))).group_by(u.run_id, u.model).order_by(u.run_id, u.model))
        return self._query(lambda conn: [
            ModelUsage(str(r[0]), r[1], int(r[2] or 0), int(r[3] or 0), int(r[4] or 0), int(r[5] or 0),
                       None if r[6] is None else float(r[6]))
            for r in conn.execute(query)
        ])
