"""Model cost from token usage and a small price table, and span attributes that say which it is.

The table is indicative, not authoritative: a hand-kept snapshot (USD per million tokens), small on
purpose. A model it does not list gives ``None`` -- never 0, which would sum quietly into a total. A
provider-reported cost always wins over an estimate, and spans record which one they carry.

Example::

    estimate_model_cost("text-embedding-3-small", TokenUsage(input_tokens=1_000_000))   # 0.02
    estimate_model_cost("my-local-model", TokenUsage(input_tokens=10))                   # None
    resolve_model_cost("gpt-4o-mini", TokenUsage(input_tokens=10, cost_usd=0.5))  # ModelCost(0.5, "provider")
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable


@runtime_checkable
class UsageLike(Protocol):
    """Token counts the cost functions read: ``TokenUsage`` here, or any object with these fields
    (``lunora_jobs.models.base.Usage`` is one)."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def cost_usd(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens of one or more embedding/model calls. ``cost_usd`` only when the provider reported one."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float | None = None

    def __add__(self, other: TokenUsage) -> TokenUsage:
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            cost,
        )

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> TokenUsage:
        """From a JSON-style dict (missing counts are 0)."""
        cost = data.get("cost_usd")
        return cls(
            int(data.get("input_tokens") or 0),
            int(data.get("output_tokens") or 0),
            int(data.get("cache_read_tokens") or 0),
            None if cost is None else float(cost),
        )


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens. ``cache_read`` defaults to the input price when a provider has no discount."""

    input: float
    output: float = 0.0
    cache_read: float | None = None


# Snapshot of public list prices; pass ``prices=`` for anything you invoice against.
PRICES: dict[str, ModelPrice] = {
    "text-embedding-3-small": ModelPrice(0.02),
    "text-embedding-3-large": ModelPrice(0.13),
    "text-embedding-ada-002": ModelPrice(0.10),
    "gpt-4o": ModelPrice(2.50, 10.00, 1.25),
    "gpt-4o-mini": ModelPrice(0.15, 0.60, 0.075),
    "gpt-4.1": ModelPrice(2.00, 8.00, 0.50),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60, 0.10),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40, 0.025),
}

CostSource = Literal["provider", "estimate"]


@dataclass(frozen=True, slots=True)
class ModelCost:
    """A cost in USD and where it came from."""

    usd: float
    source: CostSource


def _usage(usage: UsageLike | Mapping[str, Any]) -> UsageLike:
    if isinstance(usage, Mapping):
        return TokenUsage.from_mapping(usage)
    return usage


def _price(model: str, prices: Mapping[str, ModelPrice]) -> ModelPrice | None:
    # "openai:gpt-4o-mini" and "openai/gpt-4o-mini" name the same listed model.
    for name in (model, model.split(":", 1)[-1], model.rsplit("/", 1)[-1]):
        if name in prices:
            return prices[name]
    return None


def estimate_model_cost(
    model: str, usage: UsageLike | Mapping[str, Any], prices: Mapping[str, ModelPrice] | None = None
) -> float | None:
    """Estimated USD cost of ``usage`` on ``model`` from ``prices`` (default ``PRICES``); None if unpriced.

    Cache-read tokens are a subset of input tokens and are charged at the cache-read price.
    """
    price = _price(model, PRICES if prices is None else prices)
    if price is None:
        return None
    u = _usage(usage)
    cached = min(u.cache_read_tokens, u.input_tokens)
    cache_price = price.input if price.cache_read is None else price.cache_read
    return (
        (u.input_tokens - cached) * price.input + cached * cache_price + u.output_tokens * price.output
    ) / 1e6


def resolve_model_cost(
    model: str, usage: UsageLike | Mapping[str, Any], prices: Mapping[str, ModelPrice] | None = None
) -> ModelCost | None:
    """The provider-reported cost when ``usage.cost_usd`` is set, else the estimate, else ``None``."""
    u = _usage(usage)
    if u.cost_usd is not None:
        return ModelCost(float(u.cost_usd), "provider")
    estimate = estimate_model_cost(model, u, prices)
    return None if estimate is None else ModelCost(estimate, "estimate")


def set_cost_attributes(
    span: Any,
    model: str,
    usage: UsageLike | Mapping[str, Any],
    prices: Mapping[str, ModelPrice] | None = None,
) -> ModelCost | None:
    """Set token counts and ``lunora.cost.usd`` + ``lunora.cost.source`` ("provider" | "estimate") on an
    OpenTelemetry span; an unpriced model gets no cost attribute at all."""
    u = _usage(usage)
    span.set_attribute("gen_ai.usage.input_tokens", u.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", u.output_tokens)
    cost = resolve_model_cost(model, u, prices)
    if cost is not None:
        span.set_attribute("lunora.cost.usd", cost.usd)
        span.set_attribute("lunora.cost.source", cost.source)
    return cost
