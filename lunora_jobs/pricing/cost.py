"""Cost arithmetic: tokens times a price, which price names a model, and the provider-wins rule.

Example::

    cost_of(ModelPrice("gpt-4o-mini", 0.15, 0.60, 0.075), Usage(input_tokens=1_000_000))   # 0.15
    resolve_cost(Usage(10, 5, cost_usd=0.2), price=None)         # ModelCost(0.2, "provider")
    resolve_cost(Usage(10, 5), price=None)                       # ModelCost(None, "none")
    price_names("openai:gpt-4o-mini-2024-07-18")
    # ["openai:gpt-4o-mini-2024-07-18", "openai:gpt-4o-mini", "gpt-4o-mini-2024-07-18", "gpt-4o-mini"]
"""

from __future__ import annotations

import re

from lunora_jobs.models.base import Usage
from lunora_jobs.pricing.records import ModelCost, ModelPrice

_DATED = re.compile(r"^(.*?)[-@](?:\d{4}-\d{2}-\d{2}|\d{8})$")


def cost_of(price: ModelPrice, usage: Usage) -> float:
    """USD for ``usage`` at ``price``. Cache reads are a subset of input, charged at the cached price."""
    cached = min(max(usage.cache_read_tokens, 0), usage.input_tokens)
    cached_price = price.cached_input_per_mtok
    if cached_price is None:
        cached_price = price.input_per_mtok
    return (
        (usage.input_tokens - cached) * price.input_per_mtok
        + cached * cached_price
        + usage.output_tokens * price.output_per_mtok
    ) / 1e6


def resolve_cost(usage: Usage, price: ModelPrice | None) -> ModelCost:
    """The provider-reported cost when there is one, else the estimate at ``price``, else no figure."""
    if usage.cost_usd is not None:
        return ModelCost(float(usage.cost_usd), "provider")
    if price is None:
        return ModelCost(None, "none")
    return ModelCost(cost_of(price, usage), "estimate")


def price_names(model: str) -> list[str]:
    """The names a price may be stored under, most specific first.

    A usage row names the model as the provider reported it (``gpt-4o-mini-2024-07-18``,
    ``claude-sonnet-4-5-20250929``) or as the registry spelled it (``openai:gpt-4o-mini``,
    ``openrouter:openai/gpt-4o-mini``); a price is usually stored under the plain name.
    """
    names: list[str] = []
    for name in (model, model.split(":", 1)[-1], model.rsplit("/", 1)[-1]):
        for candidate in (name, _undated(name)):
            if candidate and candidate not in names:
                names.append(candidate)
    return names


def _undated(name: str) -> str:
    match = _DATED.match(name)
    return match.group(1) if match else name
