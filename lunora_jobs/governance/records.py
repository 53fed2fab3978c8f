"""The governance read-model's records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GroupBy = Literal["actor", "tenant", "agent", "model", "day"]
GROUPS: tuple[str, ...] = ("actor", "tenant", "agent", "model", "day")
DAY_MS = 86_400_000
"""A UTC day in epoch milliseconds; ``day`` groups are keyed by the day's first millisecond."""


@dataclass(frozen=True, slots=True)
class UsageFilter:
    """Narrow a usage query to one actor / tenant / agent / model (None: any)."""

    actor: str | None = None
    tenant: str | None = None
    agent: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class UsageGroup:
    """Sums over the usage rows of one group (``key``: the actor, tenant, agent or model — None for
    rows without one — or the UTC day's first epoch ms; None for an ungrouped total).

    ``cost_usd`` sums the rows that have a figure (provider-reported or estimated); it is None when
    no row has one — an unpriced model gives no figure, never 0 — and ``unpriced_rows`` says how
    many rows the figure leaves out.
    """

    key: str | int | None
    rows: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    unpriced_rows: int = 0

    @property
    def total_tokens(self) -> int:
        """Input + output tokens (cache tokens are subsets of input, never re-added)."""
        return self.input_tokens + self.output_tokens


def group_order(group: UsageGroup) -> tuple[bool, str | int]:
    """The order groups are listed in, whatever the database's collation: None first, then by key."""
    key = group.key
    return (key is not None, key if isinstance(key, int) else str(key or ""))
