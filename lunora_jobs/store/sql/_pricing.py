"""Model prices over SQL (``agent_pricing``), and the cost of every usage row written.

Costing a usage row on the hot path reads an in-process snapshot of the whole (small) table, so it
adds no database round trip: the snapshot is loaded on first need, reloaded after ``price_ttl_s``
seconds and after every price written through this store; a price edited by another process is
seen within ``price_ttl_s``. Listing reads the table itself. Costing is bookkeeping: when the
snapshot cannot be read it is logged and the rows are recorded without a figure ("none") for
``price_retry_s``, rather than failing the step that used the model.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.errors import ConfigurationError
from lunora_jobs.pricing import ModelPrice, PriceTable, When, checked_price, indicative_prices, to_ms
from lunora_jobs.store._pricing import costed
from lunora_jobs.store.records import UsageEntry
from lunora_jobs.store.schema import pricing
from lunora_jobs.store.sql._base import SqlBase

log = logging.getLogger(__name__)


class SqlPricingMixin(SqlBase):
    """The ``PricingStore`` of ``SqlStore``."""

    price_ttl_s: float = 300.0
    price_retry_s: float = 30.0
    _pricing_lock = threading.Lock()
    _price_snapshot: tuple[float, PriceTable] | None = None

    def ensure_tables(self) -> None:
        """Provision the tables, seed the indicative prices into an empty pricing table, and load the
        price snapshot now, so the first step's completion does not pay for it."""
        super().ensure_tables()
        self.seed_prices(indicative_prices())
        self._prices()

    def list_prices(self, model: str | None = None) -> list[ModelPrice]:
        """Every stored price (of ``model`` when given), by model then start."""
        c = pricing.c
        query = sa.select(pricing).order_by(c.model, c.effective_from)
        if model is not None:
            query = query.where(c.model == model)
        return self._query(lambda conn: [_price(row) for row in conn.execute(query).mappings()])

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
        c = pricing.c
        row = price.to_json()
        key = (c.model == price.model, c.effective_from == price.effective_from)

        def work(conn: Connection) -> None:
            if conn.execute(sa.update(pricing).where(*key).values(row)).rowcount == 0:
                conn.execute(sa.insert(pricing).values(row))

        try:
            self._write(work)
        except sa.exc.IntegrityError:
            try:
                self._write(work)  # a concurrent insert of the same key: now it is an update
            except sa.exc.IntegrityError as exc:
                raise ConfigurationError(
                    "agent_pricing still has its pre-0004 key (one price per model); "
                    "run `lunora db upgrade` to allow prices with effective-from dates."
                ) from exc
        self._forget_prices()
        return price

    def delete_price(self, model: str, effective_from: When) -> bool:
        """Remove the price of ``model`` starting at ``effective_from``; False if there was none."""
        c = pricing.c
        start = to_ms(effective_from, self.clock())
        query = sa.delete(pricing).where(c.model == model, c.effective_from == start)
        deleted = self._write(lambda conn: conn.execute(query).rowcount, autocommit=True)
        self._forget_prices()
        return bool(deleted)

    def price_at(self, model: str, at: When = None) -> ModelPrice | None:
        """The price in force for ``model`` at ``at`` (default now), or None when it is unpriced."""
        return self._prices().price_at(model, to_ms(at, self.clock()))

    def seed_prices(self, prices: Iterable[ModelPrice]) -> int:
        """Insert ``prices`` when the pricing table is empty (a fresh install); the count inserted.

        Never touches a table that holds any price, so an edit or a deletion is never undone.
        """
        rows = [p.to_json() for p in prices]
        count = sa.select(sa.func.count()).select_from(pricing)
        if not rows or self._query(lambda conn: int(conn.execute(count).scalar_one())):
            return 0
        try:
            self._write(lambda conn: conn.execute(sa.insert(pricing), rows))
        except sa.exc.IntegrityError:
            return 0  # another process seeded first
        self._forget_prices()
        return len(rows)

    def _costed(self, entry: UsageEntry, now: int) -> UsageEntry:
        return costed(entry, self._prices(), now)

    def _prices(self) -> PriceTable:
        with self._pricing_lock:
            snapshot = self._price_snapshot
        if snapshot is not None and time.monotonic() - snapshot[0] <= self.price_ttl_s:
            return snapshot[1]
        try:
            table, loaded = PriceTable(self.list_prices()), time.monotonic()
        except sa.exc.DBAPIError as exc:
            log.warning("cannot read agent_pricing (%s); usage rows get no cost for %.0f s",
                        exc, self.price_retry_s)
            table, loaded = PriceTable(()), time.monotonic() - self.price_ttl_s + self.price_retry_s
        with self._pricing_lock:
            self._price_snapshot = (loaded, table)
        return table

    def _forget_prices(self) -> None:
        with self._pricing_lock:
            self._price_snapshot = None


def _price(row: sa.RowMapping) -> ModelPrice:
    cached = row["cached_input_per_mtok"]
    return ModelPrice(
        model=str(row["model"]),
        input_per_mtok=float(row["input_per_mtok"]),
        output_per_mtok=float(row["output_per_mtok"]),
        cached_input_per_mtok=None if cached is None else float(cached),
        effective_from=int(row["effective_from"]),
        updated_at=int(row["updated_at"] or 0),
    )
