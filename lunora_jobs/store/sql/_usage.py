"""The token-usage ledger over SQL: append rows; sum a window with one aggregate query.

Cache tokens are subsets of input tokens, so a spend is input + output and cache columns are
reported on their own, never re-added. Windows are half-open ``[start, end)`` in epoch-ms and are
answered by one SUM over the ``(actor, created_at)`` index: one row back, whatever the window holds.
"""

from __future__ import annotations

import sqlalchemy as sa

from lunora_jobs.store._codec import check_identity, utc_day
from lunora_jobs.store.records import UsageEntry, UsageTotals
from lunora_jobs.store.schema import token_usage
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._rows import usage_row


def _sum(column: sa.Column[int]) -> sa.ColumnElement[int]:
    return sa.func.coalesce(sa.func.sum(column), 0)


class SqlUsageMixin(SqlBase):
    """Usage-ledger operations of ``SqlStore``."""

    def record_usage(self, entry: UsageEntry) -> None:
        """Append to the token-usage ledger."""
        now = self.clock()
        row = usage_row(self._costed(entry, now), now)
        self._write(lambda conn: conn.execute(sa.insert(token_usage).values(row)))

    def quota_today(self, actor: str) -> int:
        """Input + output tokens of ``actor`` over the current UTC day (one SUM in the database)."""
        start, end = utc_day(self.clock())
        return self.usage_between(actor, start, end).total

    def usage_between(self, actor: str, start_ms: int, end_ms: int) -> UsageTotals:
        """Sums over ``start_ms <= created_at < end_ms`` (one SUM in the database)."""
        check_identity("actor", actor)
        c = token_usage.c
        query = sa.select(
            _sum(c.input_tokens), _sum(c.output_tokens), _sum(c.cache_read_tokens), _sum(c.cache_write_tokens)
        ).where(c.actor == actor, c.created_at >= start_ms, c.created_at < end_ms)
        with self._read() as conn:
            row = conn.execute(query).one()
        return UsageTotals(int(row[0]), int(row[1]), int(row[2]), int(row[3]))
