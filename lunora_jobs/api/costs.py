"""What a run cost: the provider-reported cost where the usage ledger has one, else an estimate."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from lunora_jobs.store.records import ModelUsage

Estimator = Callable[[ModelUsage], float | None]
"""Prices one run's usage on one model (None: no price known for that model)."""


def reported_only(usage: ModelUsage) -> float | None:
    """The estimator when no pricing is configured: only what the provider reported."""
    return usage.cost_usd


def run_costs(usages: Iterable[ModelUsage], estimate: Estimator = reported_only) -> dict[str, float | None]:
    """run id → cost in USD (None when no model of the run has a reported cost or a price)."""
    out: dict[str, float | None] = {}
    for usage in usages:
        cost = usage.cost_usd if usage.cost_usd is not None else estimate(usage)
        if cost is not None:
            out[usage.run_id] = (out.get(usage.run_id) or 0.0) + cost
        else:
            out.setdefault(usage.run_id, None)
    return out
