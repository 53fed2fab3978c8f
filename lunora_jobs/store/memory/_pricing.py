"""Model prices in memory: the twin of ``sql/_pricing.py`` (seeded with the indicative prices)."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from lunora_jobs.pricing import ModelPrice, PriceTable, When, checked_price, indicative_prices, to_ms
from lunora_jobs.store._codec import Clock
from lunora_jobs.store._pricing import costed
from lunora_jobs.store.records import UsageEntry


class MemoryPricingMixin:
    """The ``PricingStore`` of ``InMemoryStore``."""

    clock: Clock
    _prices_by_key: dict[tuple[str, int], ModelPrice]
    _prices_lock: threading.Lock

    def _init_pricing(self) -> None:
        self._prices_by_key = {}
        self._prices_lock = threading.Lock()
        self.seed_prices(indicative_prices())

    def list_prices(self, model: str | None = None) -> list[ModelPrice]:
        """Every stored price (of ``model`` when given), by model then start."""
        with self._prices_lock:
            rows = list(self._prices_by_key.values())
        return PriceTable(p for p in rows if model is None or p.model == model).rows()

    def set_price(
        self,
        model: str,
        *,
        input_per_mtok: float,
        output_per_mtok: float,
        cached_input_per_mtok: float | None = None,
        effective_from: When = None,
    ) -> ModelPrice:
        """Store a price from ``effective_from`` (default now); the same model and start is replaced."""
        price = checked_price(
            model, input_per_mtok, output_per_mtok, cached_input_per_mtok, effective_from, self.clock()
        )
        with self._prices_lock:
            self._prices_by_key[(price.model, price.effective_from)] = price
        return price

    def delete_price(self, model: str, effective_from: When) -> bool:
        """Remove the price of ``model`` starting at ``effective_from``; False if there was none."""
        key = (model, to_ms(effective_from, self.clock()))
        with self._prices_lock:
            return self._prices_by_key.pop(key, None) is not None

    def price_at(self, model: str, at: When = None) -> ModelPrice | None:
        """The price in force for ``model`` at ``at`` (default now), or None when it is unpriced."""
        return self._price_table().price_at(model, to_ms(at, self.clock()))

    def seed_prices(self, prices: Iterable[ModelPrice]) -> int:
        """Insert ``prices`` when no price is stored at all; the count inserted."""
        rows = list(prices)
        with self._prices_lock:
            if self._prices_by_key:
                return 0
            self._prices_by_key = {(p.model, p.effective_from): p for p in rows}
        return len(rows)

    def _costed(self, entry: UsageEntry, now: int) -> UsageEntry:
        return costed(entry, self._price_table(), now)

    def _price_table(self) -> PriceTable:
        with self._prices_lock:
            return PriceTable(self._prices_by_key.values())
