"""What both stores do with prices: cost a usage entry against a snapshot of the pricing table."""

from __future__ import annotations

from dataclasses import replace

from lunora_jobs.models.base import Usage
from lunora_jobs.pricing import PriceTable, resolve_cost
from lunora_jobs.store.records import UsageEntry


def costed(entry: UsageEntry, prices: PriceTable, now: int) -> UsageEntry:
    """``entry`` with ``cost_usd`` and ``cost_source``: the provider's figure when it reported one, else
    the estimate at the price in force at the entry's time, else no figure ("none"). An entry whose
    ``cost_source`` is already set was costed by its caller and is kept as it is."""
    if entry.cost_source is not None:
        return entry
    price = None
    if entry.cost_usd is None and entry.model:
        price = prices.price_at(entry.model, entry.created_at if entry.created_at is not None else now)
    usage = Usage(entry.input_tokens, entry.output_tokens, entry.cache_read_tokens, entry.cache_write_tokens,
                  entry.cost_usd)
    cost = resolve_cost(usage, price)
    return replace(entry, cost_usd=cost.usd, cost_source=cost.source)
