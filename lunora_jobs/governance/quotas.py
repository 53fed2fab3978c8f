"""Quotas: usage limits per actor and per tenant, over a UTC day or a rolling window.

A ``Quota`` is declared with the app (``Lunora(quotas=[...])``); its usage is read from the ledger
(``agent_token_usage``), where every model turn records its tokens and cost with the run's actor (the
owner) and tenant. A limit is reached once the usage in its window is at or over it: a run whose actor
or tenant is at a limit is refused at start, and a running one stops at its next turn
(``QuotaExceededError``). Example::

    Quota("actor", tokens=200_000)                     # each actor: 200k tokens per UTC day
    Quota("actor", key="u7", tokens=1_000_000)         # u7's own day limit (instead of the one above)
    Quota("tenant", cost_usd=5.0, window=3600)         # each tenant: $5 per rolling hour
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from lunora_jobs.errors import ConfigurationError

QuotaScope = Literal["actor", "tenant"]
SCOPES: tuple[QuotaScope, ...] = ("actor", "tenant")


@dataclass(frozen=True, slots=True)
class Quota:
    """A usage limit.

    ``scope``: ``"actor"`` (the run's owner) or ``"tenant"``. ``key``: the one actor / tenant it is for;
    None: every actor / tenant that has no quota of its own for the same window. ``tokens``: input +
    output tokens (cache tokens are subsets of input, never re-added); ``cost_usd``: the summed cost of
    the rows that have a figure (an unpriced model's rows have none: pair a cost limit with a token
    limit when you use one). At least one of the two. ``window``: ``"day"`` (the UTC calendar day, reset
    at midnight UTC) or a rolling window of that many seconds ending now.
    """

    scope: QuotaScope
    tokens: int | None = None
    cost_usd: float | None = None
    window: Literal["day"] | int = "day"
    key: str | None = None

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ConfigurationError(f"Quota scope={self.scope!r}; use 'actor' or 'tenant'.")
        if self.tokens is None and self.cost_usd is None:
            raise ConfigurationError("A Quota needs a limit: tokens=..., cost_usd=..., or both.")
        if self.tokens is not None and (isinstance(self.tokens, bool) or not isinstance(self.tokens, int)
                                        or self.tokens < 0):
            raise ConfigurationError(f"Quota tokens={self.tokens!r}; use a whole number, 0 or more.")
        if self.cost_usd is not None and (isinstance(self.cost_usd, bool) or not isinstance(
                self.cost_usd, int | float) or not math.isfinite(self.cost_usd) or self.cost_usd < 0):
            raise ConfigurationError(f"Quota cost_usd={self.cost_usd!r}; use a finite amount, 0 or more.")
        if self.window != "day" and (isinstance(self.window, bool) or not isinstance(self.window, int)
                                     or self.window <= 0):
            raise ConfigurationError(
                f"Quota window={self.window!r}; use 'day' (the UTC day) or a rolling window in seconds (> 0)."
            )

    @property
    def window_ms(self) -> int | None:
        """The rolling window in ms; None for the UTC day."""
        return None if self.window == "day" else int(self.window) * 1000


@dataclass(frozen=True, slots=True)
class QuotaWindow:
    """One sum the store computes: the rows of ``column == value`` with ``start_ms <= created_at``."""

    column: QuotaScope
    value: str
    start_ms: int


@dataclass(frozen=True, slots=True)
class QuotaStatus:
    """Where one actor or tenant stands against one quota.

    ``start_ms`` / ``end_ms``: the window summed (``end_ms`` is now + 1); ``resets_at_ms``: when a day
    window starts afresh (None for a rolling window: its usage ages out row by row).
    ``cost_used_usd`` sums the priced rows (None when none has a figure); ``unpriced_rows`` says how many
    rows it leaves out. ``exceeded``: a limit is reached (usage at or over it) — runs are refused.
    """

    quota: Quota
    key: str
    start_ms: int
    end_ms: int
    resets_at_ms: int | None
    tokens_used: int
    cost_used_usd: float | None
    unpriced_rows: int

    @property
    def scope(self) -> QuotaScope:
        """``"actor"`` or ``"tenant"``."""
        return self.quota.scope

    @property
    def exceeded(self) -> bool:
        """True once the usage is at or over a limit of the quota."""
        quota = self.quota
        if quota.tokens is not None and self.tokens_used >= quota.tokens:
            return True
        return quota.cost_usd is not None and (self.cost_used_usd or 0.0) >= quota.cost_usd

    def describe(self) -> str:
        """One line: ``tenant 'acme': 1200 of 1000 tokens used in the UTC day``."""
        quota = self.quota
        parts = []
        if quota.tokens is not None:
            parts.append(f"{self.tokens_used} of {quota.tokens} tokens")
        if quota.cost_usd is not None:
            parts.append(f"${self.cost_used_usd or 0.0:.6f} of ${quota.cost_usd:g}")
        span = "the UTC day" if quota.window == "day" else f"the last {quota.window} s"
        return f"{quota.scope} {self.key!r}: {' and '.join(parts)} used in {span}"


def checked_quotas(quotas: Iterable[Quota]) -> tuple[Quota, ...]:
    """The quotas, refusing two for the same scope, key and window (which would win is unclear)."""
    seen: set[tuple[str, str | None, str | int]] = set()
    out = []
    for quota in quotas:
        if not isinstance(quota, Quota):
            raise ConfigurationError(f"quotas=[...] takes Quota objects, not {type(quota).__name__}.")
        ident = (quota.scope, quota.key, quota.window)
        if ident in seen:
            raise ConfigurationError(
                f"two quotas for {quota.scope} {quota.key or '(every one)'} over window={quota.window!r}; "
                "merge them into one Quota(tokens=..., cost_usd=...)."
            )
        seen.add(ident)
        out.append(quota)
    return tuple(out)
