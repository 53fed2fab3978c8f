"""``PriceTable``: every stored price, indexed for "the price of this model in force at that time"."""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from lunora_jobs.pricing.cost import price_names
from lunora_jobs.pricing.records import ModelPrice


class PriceTable:
    """An immutable snapshot of the pricing rows."""

    def __init__(self, prices: Iterable[ModelPrice]) -> None:
        by_model: dict[str, list[ModelPrice]] = {}
        for price in prices:
            by_model.setdefault(price.model, []).append(price)
        self._rows = {m: sorted(rows, key=lambda p: p.effective_from) for m, rows in by_model.items()}
        self._starts = {m: [p.effective_from for p in rows] for m, rows in self._rows.items()}

    def price_at(self, model: str, at_ms: int) -> ModelPrice | None:
        """The price in force for ``model`` at ``at_ms``: the latest one starting at or before it, under
        the most specific name that has one (see ``price_names``); None when the model is unpriced then."""
        for name in price_names(model):
            starts = self._starts.get(name)
            if not starts:
                continue
            index = bisect.bisect_right(starts, at_ms) - 1
            if index >= 0:
                return self._rows[name][index]
        return None

    def rows(self) -> list[ModelPrice]:
        """Every row, by model then start."""
        return [p for m in sorted(self._rows) for p in self._rows[m]]
