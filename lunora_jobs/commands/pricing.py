"""``lunora pricing list|set``: dated model prices that cost usage rows."""

from __future__ import annotations

from typing import Annotated

import typer

from lunora_jobs.commands._common import JsonOption, UrlOption

NAME = "pricing"
group = typer.Typer(help="Model prices (USD per 1M tokens) that cost usage rows.", no_args_is_help=True)



@group.command("list")
def list_prices(
    model: Annotated[str | None, typer.Option(help="Only this model's prices.")] = None,
    as_json: JsonOption = False, url: UrlOption = None,
) -> None:
    """Every stored price, by model then effective-from date.

    Example: lunora pricing list --model gpt-4o-mini
    """
    from lunora_jobs.runtime.pricing_admin import list_prices as list_stored

    list_stored(model=model, as_json=as_json, url=url)


@group.command("set")
def set_price(
    model: Annotated[str, typer.Argument(help="Model name as usage rows spell it, e.g. gpt-4o-mini.")],
    input: Annotated[float, typer.Option("--input", help="USD per 1M input tokens.")],
    output: Annotated[float, typer.Option("--output", help="USD per 1M output tokens.")],
    cached_input: Annotated[
        float | None, typer.Option("--cached-input", help="USD per 1M cache-read tokens (default: --input).")
    ] = None,
    effective_from: Annotated[
        str | None, typer.Option("--from", help="ISO date or time it applies from, UTC (default: now).")
    ] = None,
    url: UrlOption = None,
) -> None:
    """Set a model's price from a date; the same model and date is replaced.

    Example: lunora pricing set gpt-4o-mini --input 0.15 --output 0.60 --from 2026-01-01
    """
    from lunora_jobs.runtime.pricing_admin import set_price as store_price

    store_price(model, input_per_mtok=input, output_per_mtok=output, cached_input_per_mtok=cached_input,
                effective_from=effective_from, url=url)
