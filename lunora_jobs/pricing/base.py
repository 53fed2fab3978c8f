"""The ``PricingStore`` protocol, the checks every implementation applies, and time parsing."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Protocol, runtime_checkable

from lunora_jobs.errors import ConfigurationError
from lunora_jobs.pricing.records import ModelPrice

When = int | float | str | date | datetime | None
"""A time: epoch milliseconds, an ISO date or datetime (UTC unless it says otherwise), or None (now)."""

MAX_MODEL = 255


@runtime_checkable
class PricingStore(Protocol):
    """Model prices with effective-from dates: ``SqlStore`` and ``InMemoryStore`` implement it
    (``app.pricing``)."""

    def list_prices(self, model: str | None = None) -> list[ModelPrice]:
        """Every stored price (of ``model`` when given), by model then start."""
        ...

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
        ...

    def delete_price(self, model: str, effective_from: When) -> bool:
        """Remove the price of ``model`` starting at ``effective_from``; False if there was none."""
        ...

    def price_at(self, model: str, at: When = None) -> ModelPrice | None:
        """The price in force for ``model`` at ``at`` (default now), or None when it is unpriced."""
        ...

    def seed_prices(self, prices: Iterable[ModelPrice]) -> int:
        """Insert ``prices`` when no price is stored at all (a fresh install); the count inserted."""
        ...


def to_ms(when: When, now_ms: int) -> int:
    """Epoch milliseconds of ``when`` (see ``When``)."""
    if when is None:
        return now_ms
    if isinstance(when, bool):
        raise ConfigurationError(f"Not a time: {when!r}.")
    if isinstance(when, int | float):
        if not math.isfinite(when) or when < 0:
            raise ConfigurationError(f"Not a time: {when!r} (epoch milliseconds, 0 or more).")
        return int(when)
    if isinstance(when, str):
        try:
            when = datetime.fromisoformat(when.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ConfigurationError(
                f"Not a time: {when!r}; use an ISO date like 2026-01-31 or 2026-01-31T12:00:00Z."
            ) from exc
    if isinstance(when, datetime):
        moment = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)
    if isinstance(when, date):
        return int(datetime(when.year, when.month, when.day, tzinfo=UTC).timestamp() * 1000)
    raise ConfigurationError(f"Not a time: {when!r}.")


def checked_price(
    model: str,
    input_per_mtok: float,
    output_per_mtok: float,
    cached_input_per_mtok: float | None,
    effective_from: When,
    now_ms: int,
) -> ModelPrice:
    """The ``ModelPrice`` a store writes at ``now_ms``, after the checks every store applies (named
    errors saying what to fix); ``effective_from`` None is now."""
    if not isinstance(model, str) or not model.strip() or len(model) > MAX_MODEL:
        raise ConfigurationError(f"model must be a non-empty name of at most {MAX_MODEL} characters.")
    prices = (("input", input_per_mtok), ("output", output_per_mtok), ("cached input", cached_input_per_mtok))
    for label, value in prices:
        if value is None and label == "cached input":
            continue
        number = float("nan") if isinstance(value, bool) or not isinstance(value, int | float) else value
        if not math.isfinite(number) or number < 0:
            raise ConfigurationError(
                f"The {label} price must be a number of USD per 1M tokens, 0 or more; got {value!r}."
            )
    return ModelPrice(
        model=model,
        input_per_mtok=float(input_per_mtok),
        output_per_mtok=float(output_per_mtok),
        cached_input_per_mtok=None if cached_input_per_mtok is None else float(cached_input_per_mtok),
        effective_from=to_ms(effective_from, now_ms),
        updated_at=now_ms,
    )
