"""What ``lunora pricing list|set`` runs: prices on the store at a database URL, printed for people.

Errors a user can hit print one line saying what to fix and exit 1.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import typer

from lunora_jobs.config import Settings
from lunora_jobs.errors import LunoraError
from lunora_jobs.pricing import ModelPrice, When
from lunora_jobs.store import SqlStore, create_store

T = TypeVar("T")


def list_prices(*, model: str | None = None, as_json: bool = False, url: str | None = None) -> None:
    """Print every stored price (of ``model``), by model then start."""
    rows = _with_store(url, lambda store: store.list_prices(model))
    if as_json:
        for price in rows:
            typer.echo(json.dumps(price.to_json()))
        return
    if not rows:
        typer.echo("No prices stored." if model is None else f"No prices stored for {model!r}.")
        return
    header = ("model", "input", "cached input", "output", "effective from (UTC)")
    table = [header, *(_cells(p) for p in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for row in table:
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    typer.echo("USD per 1M tokens; a usage row is costed at the price in force at its time.")


def set_price(
    model: str,
    *,
    input_per_mtok: float,
    output_per_mtok: float,
    cached_input_per_mtok: float | None = None,
    effective_from: When = None,
    url: str | None = None,
) -> None:
    """Store a price and print it."""
    price = _with_store(url, lambda store: store.set_price(
        model, input_per_mtok=input_per_mtok, output_per_mtok=output_per_mtok,
        cached_input_per_mtok=cached_input_per_mtok, effective_from=effective_from,
    ))
    cells = _cells(price)
    typer.echo(f"{price.model}: input {cells[1]}, cached input {cells[2]}, output {cells[3]} "
               f"USD per 1M tokens, from {cells[4]}")


def _with_store(url: str | None, work: Callable[[SqlStore], T]) -> T:
    store: SqlStore | None = None
    try:
        store = create_store(url or Settings().resolved_database_url())
        return work(store)
    except LunoraError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    finally:
        if store is not None:
            store.close()


def _cells(price: ModelPrice) -> tuple[str, str, str, str, str]:
    cached = "=input" if price.cached_input_per_mtok is None else f"{price.cached_input_per_mtok:g}"
    return (price.model, f"{price.input_per_mtok:g}", cached, f"{price.output_per_mtok:g}",
            _when(price.effective_from))


def _when(ms: int) -> str:
    if ms == 0:
        return "always (indicative seed)"
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    midnight = moment == moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return moment.strftime("%Y-%m-%d" if midnight else "%Y-%m-%dT%H:%M:%SZ")
