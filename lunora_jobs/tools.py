"""Tools an agent can call: ``define_tool``, the ``@tool`` decorator, ``function_tool`` and ``ToolContext``.

Example::

    @tool(needs_approval=lambda i: i["amount"] > 5000)
    def charge_card(amount: float, ctx: ToolContext) -> str:
        \"\"\"Charge the customer's saved card.\"\"\"
        return ctx.run("billing:charge", {"amount": amount}, idempotency_key=ctx.idempotency_key)

    charge_card.spec()            # ToolSpec(name="charge_card", description=..., parameters={...})
    charge_card.validate({})      # raises ToolInputError: 'amount' is a required property
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

import jsonschema
from pydantic import BaseModel

from lunora_jobs.errors import ConfigurationError, InvalidToolError, ToolInputError
from lunora_jobs.models.base import ToolSpec
from lunora_jobs.tool_schema import bind_function, describe_function, normalize_execute, settle

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""The tool-name rule every chat-completions provider accepts."""

NeedsApproval = bool | Callable[[dict[str, Any]], bool]


@dataclass
class ToolContext:
    """What a tool's ``execute`` gets besides its input. The engine builds it with keyword args.

    ``idempotency_key`` is the durable step name (``tool:<name>:<call_id>``): dedupe side effects on it.
    It is stable across retries and replays of the step and unique within the run; a dedupe table
    shared by many runs should key on ``f"{ctx.run_id}:{ctx.idempotency_key}"``, because some
    providers (and the offline model) reuse call ids across runs.
    """

    idempotency_key: str
    run_id: str
    thread_key: str
    owner: str | None
    tool_call_id: str
    _run_function: Callable[..., Any] | None = field(default=None, repr=False)
    _get_state: Callable[[], Any] | None = field(default=None, repr=False)
    _set_state: Callable[[Any], None] | None = field(default=None, repr=False)
    _memo: Callable[[str, Callable[[], Any]], Any] | None = field(default=None, repr=False)
    _approvals: Mapping[str, Any] | None = field(default=None, repr=False)

    def run(self, function_path: str, args: dict[str, Any], *, idempotency_key: str | None = None) -> Any:
        """Dispatch a registered function (``"module:function"`` path) and return its result."""
        if self._run_function is None:
            raise ConfigurationError(
                f"ctx.run({function_path!r}) needs a function runner; run tools through the Lunora engine."
            )
        return self._run_function(function_path, args, idempotency_key=idempotency_key)

    def memo(self, key: str, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` once per run for the durable ``key`` (``f"{ctx.idempotency_key}/<id>"``) and return
        its JSON result: a retried or taken-over tool step replays a finished key instead of running
        ``fn`` again. In the engine each key is a ledger row; outside it (``generate_text``'s inline
        tools, a bare ``ToolContext``) there is no ledger and ``fn`` simply runs."""
        if self._memo is None:
            return fn()
        return self._memo(key, fn)

    def approval(self, part: str) -> dict[str, Any] | None:
        """The human decision on part ``part`` of this call (a tool gated per part, see
        ``ToolDefinition.approval_parts``): ``{"approved", "reason", "decided_by"}``, or None when no
        decision was asked for that part (it was not gated, or the tool runs outside the engine)."""
        decision = (self._approvals or {}).get(part)
        return dict(decision) if isinstance(decision, Mapping) else None

    def get_state(self) -> Any:
        """The thread's synced state (seeded from the agent's ``initial_state``)."""
        if self._get_state is None:
            raise ConfigurationError(
                "ctx.get_state() needs the engine's state accessor; run tools through Lunora."
            )
        return self._get_state()

    def set_state(self, value: Any) -> None:
        """Replace the thread's synced state (JSON-serialisable)."""
        if self._set_state is None:
            raise ConfigurationError(
                "ctx.set_state() needs the engine's state accessor; run tools through Lunora."
            )
        self._set_state(value)


@dataclass(frozen=True)
class ToolDefinition:
    """A tool: name, description, input JSON schema, ``execute(input, ctx)`` and an approval gate."""

    name: str
    description: str
    input_schema: dict[str, Any]
    execute: Callable[[dict[str, Any], ToolContext], Any]
    needs_approval: NeedsApproval = False
    delegate: Any = field(default=None, repr=False, compare=False)
    """The ``AgentDefinition`` this tool hands its calls to (``agent_as_tool``), else None: the engine
    runs such a call as a child run of that agent instead of calling ``execute``."""
    approval_parts: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = field(
        default=None, repr=False, compare=False)
    """For a call made of parts gated one by one (``code_tool``): ``approval_parts(input)`` lists the
    parts that need a human decision, ``[{"id", "tool", "input"}]`` (deterministic: it runs on
    replay). The engine waits for a decision on each (``approval:<call_id>.<id>``, listed and resolved
    like any call) and the tool reads them with ``ctx.approval(id)``."""
    _validator: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.name and not TOOL_NAME.match(self.name):
            raise InvalidToolError(
                f"Tool name {self.name!r} is invalid: "
                "use 1-64 letters, digits, '_' or '-' (e.g. 'get_weather')."
            )
        if not callable(self.execute):
            raise InvalidToolError(f"Tool {self.name!r}: execute must be callable.")
        if not (isinstance(self.needs_approval, bool) or callable(self.needs_approval)):
            raise InvalidToolError(
                f"Tool {self.name!r}: needs_approval must be a bool or a callable(input) -> bool."
            )
        if not isinstance(self.input_schema, dict) or self.input_schema.get("type", "object") != "object":
            raise InvalidToolError(
                f"Tool {self.name!r}: input_schema must be a JSON schema of type 'object'."
            )
        try:
            cls = jsonschema.validators.validator_for(self.input_schema)
            cls.check_schema(self.input_schema)
        except jsonschema.SchemaError as exc:
            raise InvalidToolError(
                f"Tool {self.name!r}: input_schema is not a valid JSON schema: {exc.message}"
            ) from exc
        object.__setattr__(self, "_validator", cls(self.input_schema))

    def spec(self) -> ToolSpec:
        """What the model sees of this tool."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.input_schema)

    def validate(self, input: Any) -> None:
        """Check ``input`` against the schema; raise ``ToolInputError`` worded for the model."""
        if not isinstance(input, dict):
            raise ToolInputError(
                f"Invalid input for tool '{self.name}': expected a JSON object, got {type(input).__name__}. "
                "Call the tool again with an object matching its schema."
            )
        errors = sorted(self._validator.iter_errors(input), key=lambda e: list(e.absolute_path))
        if errors:
            problems = "; ".join(
                f"{'/'.join(str(p) for p in e.absolute_path) or '$'}: {e.message}" for e in errors[:5]
            )
            raise ToolInputError(
                f"Invalid input for tool '{self.name}': {problems}. "
                "Fix the arguments and call the tool again."
            )

    def requires_approval(self, input: dict[str, Any]) -> bool:
        """Whether this call must wait for a human decision (deterministic: it runs on replay)."""
        if callable(self.needs_approval):
            return bool(self.needs_approval(input))
        return bool(self.needs_approval)


def define_tool(
    name: str | None = None,
    *,
    description: str,
    input_schema: dict[str, Any] | type[BaseModel],
    execute: Callable[..., Any],
    needs_approval: NeedsApproval = False,
) -> ToolDefinition:
    """Declare a tool from an explicit JSON schema (or a pydantic model class).

    ``execute`` takes ``(input)`` or ``(input, ctx)``; ``name`` may be left out when the tool is passed
    to ``define_agent`` in a dict (the key names it) or ``execute`` is a named function.

    Example::

        weather = define_tool(
            description="Look up the current weather for a city.",
            input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            execute=lambda input, ctx: ctx.run("weather:lookup", input),
        )
    """
    if isinstance(input_schema, type) and issubclass(input_schema, BaseModel):
        input_schema = input_schema.model_json_schema()
    if not callable(execute):
        raise InvalidToolError(f"Tool {name!r}: execute must be callable, got {type(execute).__name__}.")
    if name is None:
        fn_name = getattr(execute, "__name__", "")
        name = fn_name if TOOL_NAME.match(fn_name or "") else ""
    return ToolDefinition(
        name=name,
        description=description,
        input_schema=dict(input_schema),
        execute=normalize_execute(execute),
        needs_approval=needs_approval,
    )


def coerce_tool(value: Any) -> ToolDefinition | None:
    """``value`` as a ``ToolDefinition``: itself, or a tool-shaped object from a library that does not
    import this package (``name``, ``description``, ``input_schema`` and ``execute(input[, ctx])``, e.g.
    ``rag``'s ``Rag.as_tool()``); ``None`` when it is neither."""
    if isinstance(value, ToolDefinition):
        return value
    shape = ("name", "description", "input_schema", "execute")
    if all(hasattr(value, attr) for attr in shape) and callable(value.execute):
        return define_tool(
            value.name,
            description=value.description,
            input_schema=dict(value.input_schema),
            execute=value.execute,
            needs_approval=getattr(value, "needs_approval", False),
        )
    return None


@overload
def tool(fn: Callable[..., Any], /) -> ToolDefinition: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, needs_approval: NeedsApproval = False
) -> Callable[[Callable[..., Any]], ToolDefinition]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: NeedsApproval = False,
) -> ToolDefinition | Callable[[Callable[..., Any]], ToolDefinition]:
    """Turn a typed function into a tool: schema from type hints, description from the docstring.

    Usable bare (``@tool``) or with options (``@tool(name="lookup", needs_approval=True)``). A parameter
    annotated ``ToolContext`` (or named ``ctx``) receives the context and is left out of the schema.
    """

    # The declaring scope's locals resolve postponed annotations naming types defined in a function.
    caller_locals = dict(sys._getframe(1).f_locals)

    def wrap(func: Callable[..., Any]) -> ToolDefinition:
        derived = describe_function(func, context_type=ToolContext, localns=caller_locals)
        bound = bind_function(func, derived)

        def execute(input: dict[str, Any], ctx: ToolContext) -> Any:
            return settle(bound(input, ctx))

        execute.__name__ = func.__name__
        return ToolDefinition(
            name=name or func.__name__,
            description=description if description is not None else derived.description,
            input_schema=derived.schema,
            execute=execute,
            needs_approval=needs_approval,
        )

    return wrap(fn) if fn is not None else wrap


def function_tool(
    path: str,
    *,
    description: str,
    input_schema: dict[str, Any] | type[BaseModel] | None = None,
    name: str | None = None,
    needs_approval: NeedsApproval = False,
) -> ToolDefinition:
    """A tool whose execute dispatches the registered function ``path`` with the model's input.

    The step name is passed as the idempotency key, so a replayed tool step dedupes downstream.
    Example: ``function_tool("weather:lookup", description="Weather for a city", input_schema={...})``.
    """
    schema = input_schema if input_schema is not None else {"type": "object", "additionalProperties": True}

    def execute(input: dict[str, Any], ctx: ToolContext) -> Any:
        return ctx.run(path, input, idempotency_key=ctx.idempotency_key)

    tool_name = name or re.sub(r"[^a-zA-Z0-9_-]", "_", path.rsplit(".", 1)[-1])[:64]
    return define_tool(
        tool_name,
        description=description,
        input_schema=schema,
        execute=execute,
        needs_approval=needs_approval,
    )
