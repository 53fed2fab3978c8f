"""The governance read-model on SQL: one ``GROUP BY`` over ``agent_token_usage`` per query.

The window is a range on ``created_at`` and a filter an equality on ``actor`` / ``tenant`` / ``agent`` /
``model``, each led by its ``(<column>, created_at)`` index. A ``day`` group is keyed by the day's
first epoch ms (``created_at - created_at % 86400000``: integer arithmetic on every dialect).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from lunora_jobs.governance import DAY_MS, GroupBy, UsageFilter, UsageGroup, group_order
from lunora_jobs.store.schema import token_usage
from lunora_jobs.store.sql._base import SqlBase

_C = token_usage.c


def _sum(column: Any) -> Any:
    return sa.func.coalesce(sa.func.sum(column), 0)


def _group_key(group_by: GroupBy | None) -> Any:
    if group_by is None:
        return None
    if group_by == "day":
        # A literal, not a bound parameter: PostgreSQL must see one expression in SELECT and GROUP BY.
        day: Any = sa.literal_column(str(DAY_MS))
        return _C.created_at - _C.created_at % day
    return getattr(_C, group_by)


def _filters(where: UsageFilter) -> list[tuple[str, str | None]]:
    return [("actor", where.actor), ("tenant", where.tenant), ("agent", where.agent), ("model", where.model)]


def _key_value(value: Any, group_by: GroupBy | None) -> str | int | None:
    if value is None:
        return None
    return int(value) if group_by == "day" else str(value)


class SqlGovernance(SqlBase):
    """``usage_groups`` of ``SqlStore``."""

    def usage_groups(
        self, group_by: GroupBy | None, start_ms: int, end_ms: int, where: UsageFilter = UsageFilter()
    ) -> list[UsageGroup]:
        """Sums over ``start_ms <= created_at < end_ms`` per group, in one query."""
        key = _group_key(group_by)
        sums = [
            sa.func.count().label("n"), _sum(_C.input_tokens).label("i"), _sum(_C.output_tokens).label("o"),
            _sum(_C.cache_read_tokens).label("cr"), _sum(_C.cache_write_tokens).label("cw"),
            sa.func.sum(_C.cost_usd).label("cost"),
            _sum(sa.case((_C.cost_usd.is_(None), 1), else_=0)).label("unpriced"),
        ]
        query = sa.select(*([key.label("grp")] if key is not None else []), *sums).where(
            _C.created_at >= start_ms, _C.created_at < end_ms,
            *[getattr(_C, name) == value for name, value in _filters(where) if value is not None],
        )
        if key is not None:
            query = query.group_by(key)
        with self._read() as conn:
            rows = list(conn.execute(query).mappings())
        groups = [
            UsageGroup(
                key=_key_value(r["grp"] if key is not None else None, group_by),
                rows=int(r["n"]), input_tokens=int(r["i"]), output_tokens=int(r["o"]),
                cache_read_tokens=int(r["cr"]), cache_write_tokens=int(r["cw"]),
                cost_usd=None if r["cost"] is None else float(r["cost"]), unpriced_rows=int(r["unpriced"]),
            )
            for r in rows if int(r["n"]) > 0
        ]
        return sorted(groups, key=group_order)
