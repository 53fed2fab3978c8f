"""Model prices: anyone authenticated reads them; only the operator changes them.

Prices are app-wide — every tenant's usage is costed from them — so changing one is the operator's
(an admin identity without a tenant): a tenant's admin may not reprice what other tenants are charged.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from lunora_jobs.api.auth.base import Identity
from lunora_jobs.api.context import ApiContext
from lunora_jobs.api.pricing_schemas import PriceIn, PriceOut, PricesOut, Start, price_view
from lunora_jobs.api.problems import ProblemError, problem_responses
from lunora_jobs.api.runs_page import Filter
from lunora_jobs.errors import ConfigurationError, NotFoundError

# No control characters: a model name is one line of text (and a newline in the path routes nowhere: 404).
ModelName = Annotated[str, Path(min_length=1, max_length=255,
                                pattern=r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$",
                                description="The model, as usage rows name it (e.g. gpt-4o-mini).")]


def _operator(who: Identity) -> None:
    if not who.admin or who.tenant is not None:
        raise ProblemError(403, "forbidden", "only the operator (an admin identity without a tenant) may "
                           "change model prices; they apply to every tenant.")


def router(ctx: ApiContext) -> APIRouter:
    """The pricing routes."""
    api = APIRouter(tags=["pricing"])
    identity = Depends(ctx.gate)

    @api.get("/pricing", response_model=PricesOut)
    def list_prices(model: Filter = None, who: Identity = identity) -> PricesOut:
        """Every stored price (of ``model`` when given), by model then start (USD per 1M tokens)."""
        return PricesOut(prices=[price_view(p) for p in ctx.lunora.pricing.list_prices(model)])

    @api.put("/pricing/{model:path}", response_model=PriceOut, responses=problem_responses(403, 404))
    def set_price(model: ModelName, body: PriceIn, who: Identity = identity) -> PriceOut:
        """Store ``model``'s price from ``effective_from`` (default now); usage recorded from then on is
        costed at it. Operator only."""
        _operator(who)
        try:
            price = ctx.lunora.pricing.set_price(
                model, input_per_mtok=body.input, output_per_mtok=body.output,
                cached_input_per_mtok=body.cached_input, effective_from=body.effective_from)
        except ConfigurationError as exc:
            raise ProblemError(422, "invalid-request", str(exc)) from None
        return price_view(price)

    @api.delete("/pricing/{model:path}", status_code=204, response_class=Response,
                responses=problem_responses(403, 404))
    def delete_price(
        model: ModelName,
        effective_from: Annotated[Start, Query(description=(
            "The start of the price to remove: epoch ms (as listed) or an ISO 8601 date-time."))],
        who: Identity = identity,
    ) -> Response:
        """Remove the price of ``model`` that starts at ``effective_from``. Operator only."""
        _operator(who)
        if not ctx.lunora.pricing.delete_price(model, effective_from):
            raise NotFoundError(f"no price of {model!r} starts at {effective_from}; GET /pricing lists them.")
        return Response(status_code=204)

    return api
