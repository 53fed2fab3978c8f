"""Costing usage against the pricing store: the estimate, and the figure a usage row records.

Example::

    pricing = app.pricing
    estimate_model_cost("openai:gpt-4o-mini", Usage(input_tokens=1_000_000), pricing)   # 0.15 (seeded price)
    estimate_model_cost("my-local-model", Usage(input_tokens=10), pricing)              # None, never 0
    resolve_model_cost("gpt-4o-mini", Usage(10, cost_usd=0.5), pricing)   # ModelCost(0.5, "provider")
"""

from __future__ import annotations

from lunora_jobs.models.base import Usage
from lunora_jobs.pricing.base import PricingStore, When
from lunora_jobs.pricing.cost import cost_of, resolve_cost
from lunora_jobs.pricing.records import ModelCost


def estimate_model_cost(model: str, usage: Usage, pricing: PricingStore, at: When = None) -> float | None:
    """USD for ``usage`` on ``model`` at the price in force at ``at`` (default now); None if unpriced."""
    price = pricing.price_at(model, at)
    return None if price is None else cost_of(price, usage)


def resolve_model_cost(model: str | None, usage: Usage, pricing: PricingStore, at: When = None) -> ModelCost:
    """The cost a usage row records: the provider's figure when reported, else the estimate at the price
    in force at ``at``, else ``ModelCost(None, "none")``."""
    if usage.cost_usd is not None or not model:
        return resolve_cost(usage, None)
    return resolve_cost(usage, pricing.price_at(model, at))
