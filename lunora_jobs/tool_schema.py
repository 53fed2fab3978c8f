"""Derive a tool's JSON schema and description from a typed Python function.

The parameters become a pydantic model (``create_model``), so everything pydantic understands works:
``str``/``int``/``float``/``bool``, ``list[...]``, ``dict``, ``Optional``, ``Literal``, nested pydantic
models, ``Annotated[..., Field(description=...)]``, and defaults (a default makes a field optional).
Google-style ``Args:`` sections in the docstring describe the parameters.

Example::

    def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
        \"\"\"Look up the weather.

        Args:
            city: The city, e.g. Berlin.
        \"\"\"

    describe_function(get_weather).schema
    # {"type": "object", "properties": {"city": {"type": "string", "description": "The city, e.g. Berlin."},
    #  "unit": {"enum": ["c", "f"], "type": "string", "default": "c"}}, "required": ["city"]}
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from lunora_jobs.errors import InvalidToolError

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns|Return|Raises|Yields|Example|Examples)\s*:?\s*$"
)
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_CONTEXT_NAMES = {"ctx", "context"}


@dataclass(frozen=True)
class DerivedSchema:
    """What ``describe_function`` found: the input schema, description, argument model and ctx params."""

    schema: dict[str, Any]
    description: str
    model: type[BaseModel]
    context_params: tuple[str, ...]


def describe_function(
    func: Callable[..., Any], *, context_type: type | None = None, localns: dict[str, Any] | None = None
) -> DerivedSchema:
    """Build the input schema of ``func`` from its signature and docstring.

    ``localns`` resolves string annotations naming types local to the declaring scope.
    """
    try:
        hints = typing.get_type_hints(func, localns=localns, include_extras=True)
    except Exception as exc:  # an unresolvable forward reference: say which function
        raise InvalidToolError(
            f"Cannot read the type hints of {func.__name__}: {exc}. "
            "Import the annotated types at module level."
        ) from exc
    summary, arg_docs = _parse_docstring(inspect.getdoc(func) or "")
    fields: dict[str, Any] = {}
    context_params: list[str] = []
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, Any)
        if _is_context(param.name, annotation, context_type):
            context_params.append(param.name)
            continue
        if param.kind is param.POSITIONAL_ONLY:
            raise InvalidToolError(
                f"{func.__name__}: positional-only parameter {param.name!r} cannot be a tool input."
            )
        default = ... if param.default is inspect.Parameter.empty else param.default
        doc = arg_docs.get(param.name)
        fields[param.name] = (annotation, Field(default, description=doc) if doc else default)
    model_name = "".join(part.title() for part in func.__name__.split("_")) + "Input"
    try:
        model = create_model(model_name, __config__=ConfigDict(arbitrary_types_allowed=False), **fields)
        schema = model.model_json_schema()
    except Exception as exc:
        raise InvalidToolError(
            f"{func.__name__}: its parameters cannot be expressed as JSON schema ({exc}). "
            "Use str/int/float/bool, list, dict, Literal, Optional or pydantic models."
        ) from exc
    schema = _strip_titles(schema)
    schema.setdefault("properties", {})
    schema["type"] = "object"
    return DerivedSchema(schema, summary or func.__name__.replace("_", " "), model, tuple(context_params))


def bind_function(func: Callable[..., Any], derived: DerivedSchema) -> Callable[[dict[str, Any], Any], Any]:
    """Call ``func`` with a validated input dict: pydantic coerces nested models, fills defaults."""

    def call(input: dict[str, Any], ctx: Any) -> Any:
        parsed = derived.model.model_validate(input)
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        kwargs.update({name: ctx for name in derived.context_params})
        return func(**kwargs)

    return call


def normalize_execute(execute: Callable[..., Any]) -> Callable[[dict[str, Any], Any], Any]:
    """Wrap ``execute(input)`` or ``execute(input, ctx)`` (sync or async) as ``(input, ctx) -> result``."""
    try:
        params = [
            p
            for p in inspect.signature(execute).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
    except (TypeError, ValueError):  # builtins without a signature: assume (input, ctx)
        params = []
    takes_ctx = not params or len(params) >= 2 or params[0].kind is inspect.Parameter.VAR_POSITIONAL

    def run(input: dict[str, Any], ctx: Any) -> Any:
        return settle(execute(input, ctx) if takes_ctx else execute(input))

    run.__name__ = getattr(execute, "__name__", "execute")
    return run


def settle(result: Any) -> Any:
    """Drive a coroutine (an async tool) to its result; pass anything else through.

    Workers run steps synchronously. Inside a running event loop (an async web handler using the
    in-process dispatcher) ``asyncio.run`` is not allowed, so the coroutine runs on a helper thread.
    """
    if not inspect.iscoroutine(result):
        return result
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(result)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, result).result()


def _is_context(name: str, annotation: Any, context_type: type | None) -> bool:
    """A ``ToolContext`` parameter (also ``Optional`` / ``Annotated``), or an unannotated ``ctx``."""
    if context_type is not None:
        candidates = [annotation, *typing.get_args(annotation)]
        target = context_type.__name__
        if any(c is context_type or getattr(c, "__name__", None) == target for c in candidates):
            return True
    return name in _CONTEXT_NAMES and annotation is Any


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into its summary (text before the first section) and ``Args:`` entries."""
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent = 0
    for line in doc.splitlines():
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            current = None
            continue
        if section is None:
            summary.append(line)
        elif section in {"args", "arguments", "parameters", "params"} and line.strip():
            match = _ARG_LINE.match(line)
            # A new entry sits at the entries' indent; deeper lines continue the current one.
            if match and (current is None or _indent(line) <= arg_indent):
                current = match.group(1).lstrip("*")
                arg_indent = _indent(line)
                args[current] = match.group(2).strip()
            elif current is not None:
                args[current] = f"{args[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), args


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _strip_titles(node: Any) -> Any:
    # pydantic adds "title" everywhere; providers ignore it and it doubles the prompt size of a schema.
    if isinstance(node, dict):
        return {
            key: _strip_titles(value)
            if key != "properties"
            else {k: _strip_titles(v) for k, v in value.items()}
            for key, value in node.items()
            if key != "title" or not isinstance(value, str)
        }
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    return node
