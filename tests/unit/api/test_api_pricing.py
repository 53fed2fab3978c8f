"""Model prices over the HTTP API (embedded mode: SQLite, in process): anyone authenticated reads them,
only the operator changes them, and what it sets is what the app costs usage at."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lunora_jobs import Lunora, define_agent
from lunora_jobs.api import BearerTokenAuthenticator
from lunora_jobs.api.auth.base import Identity
from lunora_jobs.api.testing import serve_app
from lunora_jobs.client import AsyncClient, Client
from lunora_jobs.client.errors import ApiForbiddenError, ApiUnauthorizedError, ApiValidationError
from lunora_jobs.models import ScriptedModel
from lunora_jobs.models.base import Usage
from lunora_jobs.pricing import estimate_model_cost
from lunora_jobs.testing import final_turn

TOKENS = {
    "tok-op": Identity("ops", admin=True),
    "tok-acme-admin": Identity("boss", admin=True, tenant="acme"),
    "tok-user": Identity("u7", tenant="acme"),
}
MODEL = "house-model-x"  # not in the indicative seed: unpriced until the operator prices it
JAN = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Lunora]]:
    agent = define_agent(name="echo", instructions="Echo.", model="offline")
    app = Lunora(agents=[agent], database_url=f"sqlite:///{tmp_path}/pricing.db",
                 model=ScriptedModel([final_turn("hi")]))
    with serve_app(app, BearerTokenAuthenticator(dict(TOKENS))) as url:
        yield url, app


def test_the_operator_sets_a_price_everyone_reads_and_the_app_costs_at(served: tuple[str, Lunora]) -> None:
    url, app = served
    user, operator = Client(url, token="tok-user"), Client(url, token="tok-op")
    usage = Usage(input_tokens=2_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000)
    assert user.prices(MODEL) == []
    assert estimate_model_cost(MODEL, usage, app.pricing) is None
    assert user.prices(), "the indicative seed is readable by anyone authenticated"

    stored = operator.set_price(MODEL, input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5,
                                effective_from="2026-01-01")
    assert stored["effective_from"] == JAN
    assert user.prices(MODEL) == [stored]
    assert app.pricing.price_at(MODEL, at="2026-03-01") is not None
    # 1M uncached input at 2 + 1M cached at 0.5 + 1M output at 8.
    assert estimate_model_cost(MODEL, usage, app.pricing, at="2026-03-01") == pytest.approx(10.5)
    assert estimate_model_cost(MODEL, usage, app.pricing, at="2025-12-31") is None

    # The same model and start replaces; a name with "/" and ":" round-trips through the path.
    operator.set_price(MODEL, input_per_mtok=3.0, output_per_mtok=9.0, effective_from=JAN)
    assert [(p["input_per_mtok"], p["cached_input_per_mtok"]) for p in user.prices(MODEL)] == [(3.0, None)]
    routed = "openrouter:openai/house-model-y"
    operator.set_price(routed, input_per_mtok=1.0, output_per_mtok=1.0)
    assert [p["model"] for p in user.prices(routed)] == [routed]

    assert operator.delete_price(MODEL, JAN) is True
    assert operator.delete_price(MODEL, JAN) is False
    assert user.prices(MODEL) == []
    assert estimate_model_cost(MODEL, usage, app.pricing, at="2026-03-01") is None


def test_only_the_operator_changes_prices(served: tuple[str, Lunora]) -> None:
    url, app = served
    for token in ("tok-user", "tok-acme-admin"):  # a tenant's admin may not reprice other tenants' usage
        client = Client(url, token=token)
        with pytest.raises(ApiForbiddenError) as refused:
            client.set_price(MODEL, input_per_mtok=1.0, output_per_mtok=1.0)
        assert refused.value.problem["type"] == "urn:lunora:problem:forbidden"
        with pytest.raises(ApiForbiddenError):
            client.delete_price("gpt-4o-mini", 0)
    assert app.pricing.list_prices(MODEL) == []
    assert app.pricing.price_at("gpt-4o-mini") is not None  # the seed row survived the refused delete

    for token in (None, "wrong"):
        anonymous = Client(url, token=token)
        with pytest.raises(ApiUnauthorizedError):
            anonymous.prices()
        with pytest.raises(ApiUnauthorizedError):
            anonymous.set_price(MODEL, input_per_mtok=1.0, output_per_mtok=1.0)
    answer = httpx.put(f"{url}/pricing/{MODEL}", json={"input": 1, "output": 1}, timeout=10)
    assert answer.status_code == 401
    assert answer.headers["content-type"] == "application/problem+json"


def test_a_price_must_be_a_finite_non_negative_number(served: tuple[str, Lunora]) -> None:
    url, app = served
    operator = Client(url, token="tok-op")
    with pytest.raises(ApiValidationError) as refused:
        operator.set_price(MODEL, input_per_mtok=-1.0, output_per_mtok=1.0)
    assert refused.value.problem["errors"][0]["loc"] == ["body", "input"]
    headers = {"Authorization": "Bearer tok-op"}
    for body in ({"input": 1, "output": "Infinity"}, {"input": 1, "output": 1, "cached_input": -0.5},
                 {"input": 1}, {"input": 1, "output": 1, "effective_from": -5},
                 {"input": 1, "output": 1, "effective_from": "next tuesday"}):
        answer = httpx.put(f"{url}/pricing/{MODEL}", json=body, headers=headers, timeout=10)
        assert answer.status_code == 422, body
        assert answer.headers["content-type"] == "application/problem+json"
    blank = httpx.put(f"{url}/pricing/%20", json={"input": 1, "output": 1}, headers=headers, timeout=10)
    assert blank.status_code == 422
    assert app.pricing.list_prices(MODEL) == []


def test_async_client_prices(served: tuple[str, Lunora]) -> None:
    url, app = served

    async def scenario() -> None:
        async with AsyncClient(url, token="tok-op") as operator:
            stored = await operator.set_price(MODEL, input_per_mtok=0.25, output_per_mtok=1.0,
                                              effective_from=JAN)
            assert await operator.prices(MODEL) == [stored]
            assert await operator.delete_price(MODEL, JAN) is True
            assert await operator.delete_price(MODEL, JAN) is False
        async with AsyncClient(url, token="tok-user") as user:
            with pytest.raises(ApiForbiddenError):
                await user.set_price(MODEL, input_per_mtok=1.0, output_per_mtok=1.0)

    asyncio.run(scenario())
    assert app.pricing.list_prices(MODEL) == []
