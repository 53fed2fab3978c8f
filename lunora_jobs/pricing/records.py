"""Prices and costs: what the pricing store holds and what a usage row's cost says about itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

CostSource = Literal["provider", "estimate", "none"]
"""Where a usage row's cost comes from: the provider's bill, the pricing store, or nowhere (unpriced)."""


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens for ``model`` from ``effective_from`` (epoch ms, UTC) until the next price.

    ``cached_input_per_mtok`` prices cache-read input tokens; None charges them at the input price.
    """

    model: str
    input_per_mtok: float
    output_per_mtok: float
    cached_input_per_mtok: float | None = None
    effective_from: int = 0
    updated_at: int = 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict (the CLI's ``--json`` and the HTTP API)."""
        return {
            "model": self.model,
            "input_per_mtok": self.input_per_mtok,
            "cached_input_per_mtok": self.cached_input_per_mtok,
            "output_per_mtok": self.output_per_mtok,
            "effective_from": self.effective_from,
            "updated_at": self.updated_at,
        }


@dataclass(frozen=True, slots=True)
class ModelCost:
    """A cost in USD (None: no figure) and where it came from."""

    usd: float | None
    source: CostSource
