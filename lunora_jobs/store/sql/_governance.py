"""The governance read-model on SQL: one ``GROUP BY`` over ``agent_token_usage`` per query.

The window is a range on ``created_at`` and a filter an equality on ``actor`` / ``tenant`` / ``agent`` /
``model``, each led by its ``(<column>, created_at)`` index. A ``day`` group is keyed by the day's
first epoch ms (``created_at - created_at % 86400000``: integer arithmetic on every dialect).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from lunora_jobs.governance import DAY_MS, GroupBy, QuotaWindow, UsageFilter, UsageGroup, group_order
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
    """``usage_groups`` and ``quota_usage`` of ``SqlStore``."""

    def quota_usage(self, windows: Sequence[QuotaWindow], end_ms: int) -> list[UsageGroup]:
        """One total per window, all in ONE query: a conditional sum per window over the rows of the
        windows' actors / tenants since the earliest start (led by the ``(actor|tenant, created_at)``
        indexes)."""
        if not windows:
            return []
        columns = []
        for i, w in enumerate(windows):
            hit = sa.and_(getattr(_C, w.column) == w.value, _C.created_at >= w.start_ms)
            columns += [
                _sum(sa.case((hit, 1), else_=0)).label(f"n{i}"),
                _sum(sa.case((hit, _C.input_tokens), else_=0)).label(f"i{i}"),
                _sum(sa.case((hit, _C.output_tokens), else_=0)).label(f"o{i}"),
                _sum(sa.case((hit, _C.cache_read_tokens), else_=0)).label(f"cr{i}"),
                _sum(sa.case((hit, _C.cache_write_tokens), else_=0)).label(f"cw{i}"),
                sa.func.sum(sa.case((hit, _C.cost_usd), else_=None)).label(f"c{i}"),
                _sum(sa.case((sa.and_(hit, _C.cost_usd.is_(None)), 1), else_=0)).label(f"u{i}"),
            ]
        keys = {(w.column, w.value) for w in windows}
        query = sa.select(*columns).where(
            _C.created_at >= min(w.start_ms for w in windows), _C.created_at < end_ms,
            sa.or_(*[getattr(_C, column) == value for column, value in sorted(keys)]),
        )
        with self._read() as conn:
            row = conn.execute(query).mappings().one()
        return [
            UsageGroup(
                key=None, rows=int(row[f"n{i}"]), input_tokens=int(row[f"i{i}"]),
                output_tokens=int(row[f"o{i}"]), cache_read_tokens=int(row[f"cr{i}"]),
                cache_write_tokens=int(row[f"cw{i}"]), unpriced_rows=int(row[f"u{i}"]),
                cost_usd=None if row[f"c{i}"] is None else float(row[f"c{i}"]),
            )
            for i in range(len(windows))
        ]

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
