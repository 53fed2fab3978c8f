"""Tools: schema derivation from type hints, docstrings, validation, ctx injection, define_tool."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from lunora_jobs.errors import ConfigurationError, InvalidToolError, ToolInputError
from lunora_jobs.tools import ToolContext, ToolDefinition, define_tool, function_tool, tool


class Address(BaseModel):
    street: str
    zip_code: int | None = None


def make_ctx(**hooks: Any) -> ToolContext:
    return ToolContext(
        idempotency_key="tool:x:call_1",
        run_id="run-1",
        thread_key="t1",
        owner="user-7",
        tool_call_id="call_1",
        **hooks,
    )


@tool
def plan_trip(
    city: str,
    days: int,
    budget: float,
    refundable: bool,
    tags: list[str],
    extras: dict[str, Any],
    mode: Literal["train", "plane"] = "train",
    note: str | None = None,
    address: Address | None = None,
    party: Annotated[int, Field(description="How many travel.", ge=1)] = 1,
) -> dict[str, Any]:
    """Plan a trip to a city.

    Args:
        city: Where to go,
            e.g. Berlin.
        days: Trip length in days.
    """
    return {"city": city, "days": days, "mode": mode, "note": note, "address": address, "party": party}


def test_schema_from_type_hints() -> None:
    schema = plan_trip.input_schema
    props = schema["properties"]
    assert schema["type"] == "object"
    assert set(schema["required"]) == {"city", "days", "budget", "refundable", "tags", "extras"}
    assert props["city"] == {"type": "string", "description": "Where to go, e.g. Berlin."}
    assert props["days"]["type"] == "integer" and props["days"]["description"] == "Trip length in days."
    assert props["budget"]["type"] == "number"
    assert props["refundable"]["type"] == "boolean"
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["extras"]["type"] == "object"
    assert props["mode"]["enum"] == ["train", "plane"] and props["mode"]["default"] == "train"
    assert {"type": "null"} in props["note"]["anyOf"]
    assert props["party"]["minimum"] == 1 and props["party"]["description"] == "How many travel."
    assert "Address" in schema["$defs"]
    assert "title" not in props["city"] and "title" not in schema
    jsonschema.Draft202012Validator.check_schema(schema)


def test_description_from_docstring_summary() -> None:
    assert plan_trip.description == "Plan a trip to a city."
    assert plan_trip.name == "plan_trip"
    spec = plan_trip.spec()
    assert (spec.name, spec.description, spec.parameters) == (
        "plan_trip",
        plan_trip.description,
        plan_trip.input_schema,
    )


def test_execute_coerces_nested_models_and_fills_defaults() -> None:
    result = plan_trip.execute(
        {
            "city": "Berlin",
            "days": 2,
            "budget": 10.5,
            "refundable": True,
            "tags": [],
            "extras": {},
            "address": {"street": "Main"},
        },
        make_ctx(),
    )
    assert result["address"] == Address(street="Main")
    assert (result["mode"], result["note"], result["party"]) == ("train", None, 1)


def test_validation_messages_are_for_the_model() -> None:
    with pytest.raises(ToolInputError) as info:
        plan_trip.validate(
            {"city": 3, "days": 2, "budget": 1, "refundable": True, "tags": [], "extras": {}, "mode": "boat"}
        )
    message = str(info.value)
    assert "plan_trip" in message and "city: 3 is not of type 'string'" in message
    assert "mode: 'boat' is not one of ['train', 'plane']" in message
    assert "call the tool again" in message
    with pytest.raises(ToolInputError, match="'days' is a required property"):
        plan_trip.validate({"city": "x", "budget": 1, "refundable": True, "tags": [], "extras": {}})
    with pytest.raises(ToolInputError, match="expected a JSON object"):
        plan_trip.validate(["Berlin"])
    plan_trip.validate(
        {"city": "x", "days": 1, "budget": 1, "refundable": False, "tags": ["a"], "extras": {}}
    )


def test_context_is_injected_and_not_in_schema() -> None:
    calls: list[tuple[str, dict[str, Any], str | None]] = []
    state: dict[str, Any] = {"value": {"step": 0}}

    @tool(name="charge", needs_approval=lambda i: i["amount"] > 5000)
    def charge_card(amount: float, ctx: ToolContext) -> str:
        """Charge the customer's saved card."""
        ctx.set_state({"step": ctx.get_state()["step"] + 1})
        return str(ctx.run("billing:charge", {"amount": amount}, idempotency_key=ctx.idempotency_key))

    assert charge_card.name == "charge"
    assert list(charge_card.input_schema["properties"]) == ["amount"]

    def run_function(path: str, args: dict[str, Any], idempotency_key: str | None = None) -> str:
        calls.append((path, args, idempotency_key))
        return "ok"

    ctx = make_ctx(
        _run_function=run_function,
        _get_state=lambda: state["value"],
        _set_state=lambda v: state.update(value=v),
    )
    assert charge_card.execute({"amount": 12.0}, ctx) == "ok"
    assert calls == [("billing:charge", {"amount": 12.0}, "tool:x:call_1")]
    assert state["value"] == {"step": 1}
    assert charge_card.requires_approval({"amount": 6000}) is True
    assert charge_card.requires_approval({"amount": 10}) is False


def test_untyped_ctx_name_and_optional_context_are_injected() -> None:
    @tool
    def a(x: int, ctx):  # type: ignore[no-untyped-def]
        """A."""
        return ctx.run_id

    @tool(description="Override.")
    def b(x: int, context: ToolContext | None = None) -> str:
        """Ignored docstring."""
        assert context is not None
        return context.owner or ""

    assert list(a.input_schema["properties"]) == ["x"] and a.execute({"x": 1}, make_ctx()) == "run-1"
    assert list(b.input_schema["properties"]) == ["x"] and b.execute({"x": 1}, make_ctx()) == "user-7"
    assert b.description == "Override."


def test_async_tool_is_driven_to_completion() -> None:
    @tool
    async def slow(x: int) -> int:
        """Double it."""
        return x * 2

    assert slow.execute({"x": 4}, make_ctx()) == 8

    async def from_async_handler() -> Any:
        # An async web handler running the in-process dispatcher: asyncio.run would refuse here.
        return slow.execute({"x": 5}, make_ctx())

    assert asyncio.run(from_async_handler()) == 10
    async_define = define_tool("a", description="d", input_schema={"type": "object"}, execute=_async_echo)
    assert async_define.execute({"v": 1}, make_ctx()) == {"v": 1}


async def _async_echo(input: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return input


def test_define_tool_normalizes_execute() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    one_arg = define_tool("weather", description="Weather.", input_schema=schema, execute=lambda i: i["city"])
    two_args = define_tool(
        "weather2",
        description="Weather.",
        input_schema=schema,
        execute=lambda i, ctx: (i["city"], ctx.run_id),
    )
    assert one_arg.execute({"city": "Oslo"}, make_ctx()) == "Oslo"
    assert two_args.execute({"city": "Oslo"}, make_ctx()) == ("Oslo", "run-1")
    assert one_arg.requires_approval({"city": "x"}) is False
    assert define_tool(
        description="x", input_schema=schema, execute=one_arg.execute, needs_approval=True
    ).requires_approval({})

    class Query(BaseModel):
        q: str

    from_model = define_tool("search", description="Search.", input_schema=Query, execute=lambda i: i)
    assert from_model.input_schema["required"] == ["q"]

    def lookup(input: dict[str, Any]) -> str:
        return "x"

    assert define_tool(description="d", input_schema=schema, execute=lookup).name == "lookup"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": "bad name!"}, "Tool name"),
        ({"execute": "nope"}, "execute must be callable"),
        ({"input_schema": {"type": "string"}}, "type 'object'"),
        (
            {"input_schema": {"type": "object", "properties": {"a": {"type": "strang"}}}},
            "not a valid JSON schema",
        ),
        ({"needs_approval": "yes"}, "needs_approval"),
    ],
)
def test_bad_tool_declarations(kwargs: dict[str, Any], match: str) -> None:
    options: dict[str, Any] = {
        "name": "ok",
        "description": "d",
        "input_schema": {"type": "object"},
        "execute": lambda i: i,
        **kwargs,
    }
    with pytest.raises(InvalidToolError, match=match):
        define_tool(**options)


def test_unexpressible_parameter_is_a_declaration_error() -> None:
    class Opaque:
        pass

    with pytest.raises(InvalidToolError, match="JSON schema"):

        @tool
        def bad(x: Opaque) -> None:
            """Bad."""


def test_function_tool_dispatches_with_the_step_key() -> None:
    seen: list[Any] = []
    weather = function_tool(
        "weather:lookup",
        description="Weather for a city.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    assert isinstance(weather, ToolDefinition) and weather.name == "weather_lookup"

    def run_function(path: str, args: dict[str, Any], idempotency_key: str | None = None) -> int:
        seen.append((path, args, idempotency_key))
        return 21

    ctx = make_ctx(_run_function=run_function)
    assert weather.execute({"city": "Oslo"}, ctx) == 21
    assert seen == [("weather:lookup", {"city": "Oslo"}, "tool:x:call_1")]


def test_context_without_engine_hooks_says_what_to_do() -> None:
    with pytest.raises(ConfigurationError, match="function runner"):
        make_ctx().run("x:y", {})
    with pytest.raises(ConfigurationError, match="state"):
        make_ctx().get_state()


def test_types_local_to_the_declaring_function_resolve() -> None:
    class Filters(BaseModel):
        color: str

    @tool
    def find(filters: Filters) -> str:
        """Find things."""
        return filters.color

    assert find.execute({"filters": {"color": "red"}}, make_ctx()) == "red"
