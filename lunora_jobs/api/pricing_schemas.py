"""The pricing bodies of the API (pydantic): a price to store, a stored price, and the view that
builds one from a ``ModelPrice``."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from lunora_jobs.pricing import ModelPrice

MAX_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: the latest start a price may name (epoch ms; a database BIGINT holds it)."""

_ISO_DATE = re.compile(r"^[0-9]{4}-")


def _iso_text(value: Any) -> Any:
    # pydantic would read a bare number as epoch seconds; a number here is epoch ms (the int branch).
    if isinstance(value, datetime) or (isinstance(value, str) and _ISO_DATE.match(value)):
        return value
    raise ValueError("use epoch milliseconds (0 or more) or an ISO 8601 date / date-time")


EpochMs = Annotated[int, Field(ge=0, le=MAX_MS)]
Start = EpochMs | Annotated[datetime, BeforeValidator(_iso_text)]
"""When a price starts: epoch milliseconds, or an ISO 8601 date / date-time (UTC unless it names an
offset) — the ``effective_from`` a listing shows can be sent back as is."""
UsdPerMtok = Annotated[float, Field(ge=0, allow_inf_nan=False, description="USD per 1M tokens.")]


class PriceIn(BaseModel):
    """A model's price from ``effective_from`` (default: now); the same model and start is replaced."""

    model_config = ConfigDict(extra="forbid")

    input: UsdPerMtok
    cached_input: UsdPerMtok | None = Field(
        default=None, description="USD per 1M cache-read input tokens; null charges them at the input price.")
    output: UsdPerMtok
    effective_from: Start | None = None


class PriceOut(BaseModel):
    """A stored price; ``effective_from`` and ``updated_at`` are epoch ms (UTC); 0 starts "since always"
    (the indicative seed)."""

    model: str
    input_per_mtok: float
    cached_input_per_mtok: float | None
    output_per_mtok: float
    effective_from: int
    updated_at: int


class PricesOut(BaseModel):
    """Stored prices, by model then start."""

    prices: list[PriceOut]


def price_view(price: ModelPrice) -> PriceOut:
    """The body of one stored price."""
    return PriceOut(**price.to_json())
