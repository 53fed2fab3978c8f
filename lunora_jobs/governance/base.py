"""The ``GovernanceStore`` capability: usage sums over the ledger, grouped (``SqlStore`` and
``InMemoryStore`` implement it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from lunora_jobs.governance.quotas import QuotaWindow
from lunora_jobs.governance.records import GroupBy, UsageFilter, UsageGroup


@runtime_checkable
class GovernanceStore(Protocol):
    """Usage aggregates over ``agent_token_usage``."""

    def usage_groups(
        self, group_by: GroupBy | None, start_ms: int, end_ms: int, where: UsageFilter = UsageFilter()
    ) -> list[UsageGroup]:
        """Sums over ``start_ms <= created_at < end_ms`` per group (one query); ``group_by=None``:
        one total (no group at all when no row matched)."""
        ...

    def quota_usage(self, windows: Sequence[QuotaWindow], end_ms: int) -> list[UsageGroup]:
        """One total per window (``key`` None; an empty window gives a zero total): the rows of
        ``window.column == window.value`` with ``window.start_ms <= created_at < end_ms`` — all the
        windows in ONE query (what a quota check costs)."""
        ...
