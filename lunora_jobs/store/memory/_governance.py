"""The governance read-model over the in-memory usage ledger: the same groups the SQL stores compute."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lunora_jobs.governance import DAY_MS, GroupBy, QuotaWindow, UsageFilter, UsageGroup, group_order
from lunora_jobs.store.records import UsageEntry


def _key(entry: UsageEntry, group_by: str | None) -> str | int | None:
    if group_by is None:
        return None
    if group_by == "day":
        created = entry.created_at or 0
        return created - created % DAY_MS
    value: str | None = getattr(entry, group_by)
    return value


def _matches(entry: UsageEntry, where: UsageFilter) -> bool:
    return all(
        wanted is None or getattr(entry, name) == wanted
        for name, wanted in (("actor", where.actor), ("tenant", where.tenant), ("agent", where.agent),
                             ("model", where.model))
    )


class MemoryGovernanceMixin:
    """``usage_groups`` and ``quota_usage`` of ``InMemoryStore``."""

    _usage: list[UsageEntry]
    _lock: Any

    def usage_groups(
        self, group_by: GroupBy | None, start_ms: int, end_ms: int, where: UsageFilter = UsageFilter()
    ) -> list[UsageGroup]:
        """Sums over ``start_ms <= created_at < end_ms`` per group."""
        with self._lock:
            entries = list(self._usage)
        return fold_usage(entries, group_by, start_ms, end_ms, where)

    def quota_usage(self, windows: Sequence[QuotaWindow], end_ms: int) -> list[UsageGroup]:
        """One total per window (a zero total for an empty one)."""
        with self._lock:
            entries = list(self._usage)
        totals = []
        for w in windows:
            where = UsageFilter(**{w.column: w.value})
            found = fold_usage(entries, None, w.start_ms, end_ms, where)
            totals.append(found[0] if found else UsageGroup(None))
        return totals


def fold_usage(
    entries: Iterable[UsageEntry], group_by: GroupBy | None, start_ms: int, end_ms: int,
    where: UsageFilter = UsageFilter(),
) -> list[UsageGroup]:
    """The groups of ``entries`` with ``start_ms <= created_at < end_ms``, ordered by key (None first)."""
    sums: dict[str | int | None, list[float]] = {}
    for e in entries:
        if not start_ms <= (e.created_at or 0) < end_ms or not _matches(e, where):
            continue
        acc = sums.setdefault(_key(e, group_by), [0, 0, 0, 0, 0, 0.0, 0])
        acc[0] += 1
        acc[1] += e.input_tokens
        acc[2] += e.output_tokens
        acc[3] += e.cache_read_tokens
        acc[4] += e.cache_write_tokens
        if e.cost_usd is None:
            acc[6] += 1
        else:
            acc[5] += e.cost_usd
    groups = [
        UsageGroup(key, int(a[0]), int(a[1]), int(a[2]), int(a[3]), int(a[4]),
                   None if a[0] == a[6] else float(a[5]), int(a[6]))
        for key, a in sums.items()
    ]
    return sorted(groups, key=group_order)
