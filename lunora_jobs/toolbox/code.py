"""``code_tool``: the model composes several tool calls in one turn as a script of data flow.

The model sends ``{"steps": [{"id", "tool", "input"}, ...]}``; an input may reference an earlier
step's output anywhere inside it with ``{"$from": "<id>", "$path": "a.b.0"}`` (``$path`` optional,
dot-separated keys and list indices). The script is interpreted, never evaluated: only the tools
handed to ``code_tool`` can run, in the listed order, each with its input validated against its own
schema. Each call runs under its own idempotency key ``<step>/<id>`` through ``ctx.memo``, so a
crash between two calls re-runs no finished call when the step runs again. Each call keeps its own
``needs_approval`` gate: every gated step of a script waits for a decision of its own (listed and
resolved as ``<call_id>.<step id>``, with that step's tool and input; a gate whose predicate reads a
value that comes from another step counts as gated), the ungated steps need none, and the script
runs once every gated step is decided. A rejected step does not run, nor does any step after it: the
model reads which one was rejected and why, with the outputs of the steps that ran. A bad script
(an unknown tool, a reference to a missing, later or cyclic step, a bad ``$path``, too many steps)
is a ``ToolError``: the model reads what is wrong and can send a fixed script.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from lunora_jobs.errors import InvalidToolError, ToolError, ToolInputError
from lunora_jobs.tools import ToolContext, ToolDefinition, coerce_tool, define_tool

STEP_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def code_tool(
    tools: Mapping[str, ToolDefinition] | Sequence[ToolDefinition],
    *,
    max_steps: int = 16,
    name: str = "code",
    description: str | None = None,
) -> ToolDefinition:
    """A tool running a script of calls to ``tools`` (a dict name -> tool, or a list of named tools).

    Example::

        analyst = define_agent(name="analyst", tools=[code_tool({"find_user": find_user,
                                                                 "recent_orders": recent_orders})])
        # the model sends: {"steps": [{"id": "u", "tool": "find_user", "input": {"email": "a@b.c"}},
        #                             {"id": "o", "tool": "recent_orders",
        #                              "input": {"user_id": {"$from": "u", "$path": "id"}}}]}
        # the result: {"outputs": {"u": {...}, "o": [...]}, "final": [...]}
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise InvalidToolError(f"code_tool: max_steps must be an int >= 1, got {max_steps!r}.")
    table = _tool_table(tools)
    listing = "; ".join(f"{n}: {t.description}" for n, t in table.items())
    text = description or (
        f"Run up to {max_steps} tool calls in one go, in order. Send steps: [{{id, tool, input}}]; an "
        'input value {"$from": "<id>", "$path": "a.b.0"} is replaced by that earlier step\'s output '
        f"(or the part at $path). Returns every step's output and the final one. Tools: {listing}"
    )
    schema = {
        "type": "object",
        "properties": {"steps": {"type": "array", "items": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "tool": {"type": "string"},
                           "input": {"type": "object"}},
            "required": ["id", "tool", "input"],
        }}},
        "required": ["steps"],
    }

    def execute(input: dict[str, Any], ctx: ToolContext) -> Any:
        steps = _check_script(input.get("steps"), table, max_steps)
        outputs: dict[str, Any] = {}
        for step in steps:
            sid, tool = step["id"], table[step["tool"]]
            resolved = _resolve(step["input"], outputs, sid)
            try:
                tool.validate(resolved)
            except ToolInputError as exc:
                raise ToolError(f"step {sid!r}: {exc}") from None
            decision = ctx.approval(sid)
            if decision is not None and not decision.get("approved"):
                reason = decision.get("reason")
                raise ToolError(f"step {sid!r} ({step['tool']}) was rejected by a human reviewer"
                                f"{': ' + str(reason) if reason else ''}; it and the steps after it did not "
                                f"run. Outputs of the steps that ran: {json.dumps(outputs, default=str)}")
            sub = replace(ctx, idempotency_key=f"{ctx.idempotency_key}/{sid}")
            outputs[sid] = ctx.memo(sub.idempotency_key, partial(tool.execute, resolved, sub))
        return {"outputs": outputs, "final": outputs[steps[-1]["id"]]}

    def approval_parts(input: dict[str, Any]) -> list[dict[str, Any]]:
        steps = input.get("steps")
        if not isinstance(steps, list):
            return []
        return [{"id": step["id"], "tool": step["tool"], "input": step.get("input")}
                for step in steps if isinstance(step, dict) and STEP_ID.match(str(step.get("id")))
                and _gated(table.get(str(step.get("tool"))), step.get("input"))]

    tool = define_tool(name, description=text, input_schema=schema, execute=execute)
    return replace(tool, approval_parts=approval_parts)


def _tool_table(tools: Mapping[str, ToolDefinition] | Sequence[ToolDefinition]) -> dict[str, ToolDefinition]:
    items: list[tuple[str | None, Any]]
    if isinstance(tools, Mapping):
        items = list(tools.items())
    elif isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise InvalidToolError("code_tool: pass the tools as a dict name -> tool, or a list of tools.")
    else:
        items = [(getattr(t, "name", None), t) for t in tools]
    table: dict[str, ToolDefinition] = {}
    for key, raw in items:
        tool = coerce_tool(raw)
        if tool is None or not key:
            raise InvalidToolError(f"code_tool: {raw!r} is not a named tool; use @tool or define_tool(...).")
        if key in table:
            raise InvalidToolError(f"code_tool: the tool {key!r} is listed twice; list it once.")
        if tool.delegate is not None:
            raise InvalidToolError(f"code_tool: {key!r} delegates to an agent (agent_as_tool), which runs as "
                                   "a child run and cannot be composed; give it to the agent directly.")
        table[key] = tool
    if not table:
        raise InvalidToolError("code_tool: give it at least one tool to compose.")
    return table


def _check_script(steps: Any, table: Mapping[str, ToolDefinition], max_steps: int) -> list[dict[str, Any]]:
    """The whole script is checked before its first call runs."""
    if not isinstance(steps, list) or not steps:
        raise ToolError('send "steps" as a non-empty list of {id, tool, input}.')
    if len(steps) > max_steps:
        raise ToolError(f"the script has {len(steps)} steps; at most {max_steps} are allowed. "
                        "Split it, or send fewer steps.")
    order: dict[str, int] = {}
    for index, step in enumerate(steps):
        if not isinstance(step, dict) or not isinstance(step.get("input"), dict):
            raise ToolError(f"step #{index + 1} must be an object {{id, tool, input}} with an object input.")
        sid, tool = step.get("id"), step.get("tool")
        if not isinstance(sid, str) or not STEP_ID.match(sid):
            raise ToolError(f"step #{index + 1}: id must be 1-64 letters, digits, '_' or '-', got {sid!r}.")
        if sid in order:
            raise ToolError(f"two steps have the id {sid!r}; give each step its own id.")
        if tool not in table:
            raise ToolError(f"step {sid!r}: unknown tool {tool!r}. Tools: {', '.join(sorted(table))}.")
        order[sid] = index
    refs = {step["id"]: set(_references(step["input"])) for step in steps}
    for sid, targets in refs.items():
        for target in sorted(targets):
            if target not in order:
                raise ToolError(f"step {sid!r} references {target!r}, which is not a step of this script.")
            if order[target] >= order[sid]:
                cycle = _cycle(refs, sid)
                if cycle:
                    raise ToolError("the steps reference each other in a cycle: " + " -> ".join(cycle)
                                    + ". A step can only use the output of an earlier step.")
                raise ToolError(f"step {sid!r} references {target!r}, which runs later; list {target!r} "
                                "first (a step can only use the output of an earlier step).")
    return steps


def _references(value: Any) -> list[str]:
    if isinstance(value, dict):
        if "$from" in value:
            return [value["$from"]] if isinstance(value["$from"], str) else [repr(value["$from"])]
        return [ref for item in value.values() for ref in _references(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in _references(item)]
    return []


def _cycle(refs: Mapping[str, set[str]], start: str) -> list[str]:
    """A reference cycle through ``start`` (as a path ending where it began), or ``[]``."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(refs.get(node, ())):
            if nxt == start:
                return [*path, start]
            if nxt not in seen and nxt in refs:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return []


def _resolve(value: Any, outputs: Mapping[str, Any], sid: str) -> Any:
    if isinstance(value, dict):
        if "$from" in value:
            extra = set(value) - {"$from", "$path"}
            if extra:
                raise ToolError(f"step {sid!r}: a reference has only $from and $path, not {sorted(extra)}.")
            return _at_path(outputs[value["$from"]], value.get("$path"), value["$from"], sid)
        return {key: _resolve(item, outputs, sid) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, outputs, sid) for item in value]
    return value


def _at_path(output: Any, path: Any, source: str, sid: str) -> Any:
    if path in (None, ""):
        return output
    if not isinstance(path, str):
        raise ToolError(f"step {sid!r}: $path must be a dot-separated string like 'a.b.0', got {path!r}.")
    current = output
    for part in path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and _index(part, len(current)) is not None:
            current = current[int(part)]
        else:
            raise ToolError(f"step {sid!r}: the output of {source!r} has nothing at $path {path!r} "
                            f"(no {part!r} in {_shape(current)}).")
    return current


def _index(part: str, length: int) -> int | None:
    if not part.lstrip("-").isdigit():
        return None
    index = int(part)
    return index if -length <= index < length else None


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        return "an object with keys " + (", ".join(map(repr, list(value)[:10])) or "(none)")
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return f"a {type(value).__name__}"


def _gated(tool: ToolDefinition | None, input: Any) -> bool:
    """Whether a step's call needs approval; a predicate gate over an input that references other
    steps cannot be evaluated before the script runs, so such a step is gated."""
    if tool is None or tool.needs_approval is False:
        return False
    if not callable(tool.needs_approval):
        return bool(tool.needs_approval)
    if _references(input) or not isinstance(input, dict):
        return True
    return tool.requires_approval(input)
