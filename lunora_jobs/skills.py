"""``define_skill``: a reusable bundle of instructions, tools and knowledge that agents compose in.

``define_agent(skills=[...])`` folds skills at declaration time: tools join the agent's own in one flat
namespace (a name clash raises ``DuplicateToolError``), instructions append after the agent's own in
skill order (joined by blank lines; callables resolve once at run start). A skill's ``memory``
(its knowledge: the same shape as an agent's ``memory``) is retrieved as the durable step
``memory:retrieve:<name>`` and injected after the agent's own memory context, or, with
``mode="agentic"``, mints the tools ``search_<name>`` / ``read_<name>``.

Example::

    billing = define_skill(
        name="billing",
        instructions="For refunds, always confirm the order id first.",
        tools=[lookup_order, refund],
    )
    support = define_agent(name="support", model="offline", skills=[billing])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lunora_jobs.errors import DuplicateToolError, InvalidAgentOptionError
from lunora_jobs.memory.options import SemanticMemory, coerce_knowledge
from lunora_jobs.tools import ToolDefinition, coerce_tool

SKILL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class SkillDefinition:
    """A validated skill. It carries no runtime: the agent absorbs it at ``define_agent``."""

    name: str
    instructions: str | Callable[[dict[str, Any]], str] = ""
    tools: dict[str, ToolDefinition] = field(default_factory=dict)
    memory: SemanticMemory | None = None
    """The skill's knowledge (validated like an agent's ``memory``), or None."""


def define_skill(
    name: str,
    instructions: str | Callable[[dict[str, Any]], str] = "",
    *,
    tools: Sequence[ToolDefinition] | Mapping[str, ToolDefinition] = (),
    memory: Any = None,
) -> SkillDefinition:
    """Declare a skill; bad options raise ``InvalidAgentOptionError`` naming the skill and the fix."""
    if not isinstance(name, str) or not SKILL_NAME.match(name):
        raise InvalidAgentOptionError(
            f"Skill name {name!r} is invalid: start with a letter, then up to 63 letters, digits, '_' or '-'."
        )
    if not (isinstance(instructions, str) or callable(instructions)):
        raise InvalidAgentOptionError(
            f"Skill {name!r}: instructions must be a str or a callable(context) -> str."
        )
    try:
        knowledge = coerce_knowledge(memory, label=name)
    except InvalidAgentOptionError as exc:
        raise type(exc)(f"Skill {name!r}: {exc}") from exc
    items = list(tools.items()) if isinstance(tools, Mapping) else [(None, t) for t in tools]
    tool_map: dict[str, ToolDefinition] = {}
    for key, raw in items:
        value = coerce_tool(raw)
        if value is None:
            raise InvalidAgentOptionError(
                f"Skill {name!r}: {raw!r} is not a tool; wrap functions with @tool or define_tool(...)."
            )
        tool_def = replace(value, name=key) if key is not None and key != value.name else value
        if not tool_def.name:
            raise InvalidAgentOptionError(f"Skill {name!r}: a tool has no name; pass name= or use a dict.")
        if tool_def.name in tool_map:
            raise DuplicateToolError(f"Skill {name!r} declares the tool {tool_def.name!r} twice; rename one.")
        tool_map[tool_def.name] = tool_def
    return SkillDefinition(name=name, instructions=instructions, tools=tool_map, memory=knowledge)
