"""The agent version a run started with, and what a deploy that changes the agent mid-run does.

A run records at its start the agent's version (a hash of its declaration: instructions, model,
tools with their descriptions and input schemas, output schema, loop limits) and a digest of each
tool (``runinfo`` keeps both in the run's stored input; no schema change). A rolling deploy can put
a changed agent on the workers while runs are in flight; the policy, checked at each step:

- same version: nothing to do (one string comparison);
- the run finishes on the shape it started with where it can: its system instructions were resolved
  and stored at its start (a changed ``instructions`` never reaches it), and the model keeps seeing
  only the tools the run started with (a tool added by the deploy is offered to new runs only);
- where it cannot — a tool the run started with is gone or its input schema or description changed
  — the run fails with ``AgentChangedError`` naming the tool, at the first step that needs it (the
  next turn, which would offer it, or a pending call of it). Never silently mixed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.errors import AgentChangedError

_cache: dict[int, tuple[AgentDefinition, AgentShape]] = {}


@dataclass(frozen=True, slots=True)
class AgentShape:
    """An agent's version and its tools' digests."""

    version: str
    tools: dict[str, str]


def agent_shape(agent: AgentDefinition) -> AgentShape:
    """The shape of ``agent`` (computed once per declaration object)."""
    cached = _cache.get(id(agent))
    if cached is not None and cached[0] is agent:
        return cached[1]
    tools = {name: _digest(_tool_form(tool)) for name, tool in agent.tools.items()}
    declaration = {
        "name": agent.name, "instructions": _callable_or_value(agent.instructions),
        "model": _callable_or_value(agent.model), "tools": tools,
        "output": agent.output.json_schema if agent.output is not None else None,
        "max_turns": agent.max_turns, "skills": [s.name for s in agent.skills],
    }
    shape = AgentShape(_digest(declaration), tools)
    _cache[id(agent)] = (agent, shape)
    return shape


def recorded_tools(agent: AgentDefinition, version: str | None, tools: Mapping[str, str] | None,
                   step: str) -> list[str] | None:
    """The tools a turn of a run recorded as ``version`` / ``tools`` may offer: None when the agent is
    the version the run started with (all of them); else the recorded ones, in declaration order.
    Raises ``AgentChangedError`` when a recorded tool is gone or changed."""
    if version is None or tools is None:
        return None  # a run started before versions were recorded: nothing to compare with
    current = agent_shape(agent)
    if current.version == version:
        return None
    changed = sorted(name for name, digest in tools.items() if current.tools.get(name) != digest)
    if changed:
        raise AgentChangedError(_message(agent, step, changed))
    return [name for name in current.tools if name in tools]


def check_tool(agent: AgentDefinition, version: str | None, tools: Mapping[str, str] | None,
               name: str, step: str) -> None:
    """A pending call of tool ``name``: raise ``AgentChangedError`` if the tool changed since the run
    started (or is gone)."""
    if version is None or tools is None:
        return
    current = agent_shape(agent)
    if current.version != version and current.tools.get(name) != tools.get(name):
        raise AgentChangedError(_message(agent, step, [name]))


def _message(agent: AgentDefinition, step: str, changed: list[str]) -> str:
    return (
        f"agent {agent.name!r} was redeployed while this run was in flight, and tool(s) {changed} it "
        f"started with are gone or changed (schema or description), so step {step!r} cannot finish on "
        "the run's recorded shape; start the run again on the new version (runs started before a "
        "deploy keep their instructions and tools only while those tools stay compatible)."
    )


def _tool_form(tool: Any) -> dict[str, Any]:
    spec = tool.spec()
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters}


def _callable_or_value(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}:{value.__qualname__}"
    return type(value).__name__


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]
