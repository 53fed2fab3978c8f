"""Model prices (USD per 1M input, cached-input and output tokens, with effective-from dates) and the
cost of usage.

A provider-reported cost always wins; otherwise the price in force at the usage's time gives an
estimate; an unpriced model gives no figure (None), never 0. Every usage row records which it is
(``cost_source``: "provider" | "estimate" | "none").

Example::

    from lunora_jobs.pricing import estimate_model_cost

    prices = app.pricing                                  # the agent store (SqlStore / InMemoryStore)
    prices.set_price("gpt-4o-mini", input_per_mtok=0.15, output_per_mtok=0.60,
                     cached_input_per_mtok=0.075, effective_from="2026-01-01")
    prices.price_at("openai:gpt-4o-mini", at="2026-03-01")      # that row
    estimate_model_cost("gpt-4o-mini", usage, prices)           # float, or None if unpriced
"""

from lunora_jobs.pricing.base import PricingStore, When, checked_price, to_ms
from lunora_jobs.pricing.cost import cost_of, price_names, resolve_cost
from lunora_jobs.pricing.estimate import estimate_model_cost, resolve_model_cost
from lunora_jobs.pricing.records import CostSource, ModelCost, ModelPrice
from lunora_jobs.pricing.seed import indicative_prices
from lunora_jobs.pricing.table import PriceTable

__all__ = [
    "CostSource",
    "ModelCost",
    "ModelPrice",
    "PriceTable",
    "PricingStore",
    "When",
    "checked_price",
    "cost_of",
    "estimate_model_cost",
    "indicative_prices",
    "price_names",
    "resolve_cost",
    "resolve_model_cost",
    "to_ms",
]
