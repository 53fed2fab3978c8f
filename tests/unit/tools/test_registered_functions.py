"""ctx.run's registered functions: a plain callable takes the args object, a Celery task (a real
one, run eagerly here: no broker) takes them as keyword arguments; a task that cannot take the
arguments is a tool error the model reads."""

from __future__ import annotations

from typing import Any

import pytest
from celery import Celery

from lunora_jobs import Lunora, ToolError
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.runtime.functions import is_celery_task
from lunora_jobs.store.memory import InMemoryStore

celery = Celery("registered-functions-test")


@celery.task(name="tests.charge")
def charge(amount: float, currency: str = "EUR") -> dict[str, Any]:
    return {"charged": amount, "currency": currency}


def double(args: dict[str, Any]) -> int:
    return int(args["n"]) * 2


@pytest.fixture
def app() -> Any:
    lunora = Lunora(store=InMemoryStore(), functions={"billing:charge": charge, "math:double": double})
    yield lunora
    lunora.close()


def test_a_celery_task_takes_the_args_as_keywords(app: Any) -> None:
    assert is_celery_task(charge) and not is_celery_task(double)
    assert app.run_function("billing:charge", {"amount": 12.5}) == {"charged": 12.5, "currency": "EUR"}
    assert app.run_function("math:double", {"n": 21}) == 42


def test_a_task_found_by_its_import_path_is_called_the_same_way(app: Any) -> None:
    assert app.run_function(f"{__name__}:charge", {"amount": 3, "currency": "USD"}) == {
        "charged": 3, "currency": "USD"}


def test_arguments_a_task_cannot_take_are_a_tool_error(app: Any) -> None:
    with pytest.raises(ToolError, match="does not take these arguments"):
        app.run_function("billing:charge", {"amount": 1, "colour": "red"})
    with pytest.raises(ToolError, match="keyword arguments"):
        app.run_function("billing:charge", [1])  # type: ignore[arg-type]


def test_an_unknown_path_says_how_to_register_it(app: Any) -> None:
    with pytest.raises(ConfigurationError, match="Celery task"):
        app.run_function("nowhere:missing", {})
