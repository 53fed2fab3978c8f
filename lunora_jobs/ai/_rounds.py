"""The bounded tool loop of ``generate_text`` / ``stream_text``: call, run the tools, call again.

``ToolRounds`` holds the loop's state and does everything between two model calls, so the sync, streamed
and asyncio drivers share it: they only differ in how they obtain each ``ModelTurn``. A step runs the
tools it called; another step follows while the model keeps calling tools and ``max_steps`` allows.

Tools are the same ``ToolDefinition`` objects agents take (``@tool``, ``define_tool``). A call the model
got wrong (unknown tool, arguments that are not JSON or fail the schema) is answered with an error
message the next step sees, as in the engine; an exception a tool raises propagates to the caller. A
call whose tool needs approval raises ``ToolApprovalUnavailableError``: nobody can approve it here.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from typing import Any

from lunora_jobs.errors import ConfigurationError, ToolApprovalUnavailableError, ToolInputError
from lunora_jobs.models.base import ModelTurn, ToolCall, ToolChoice, ToolSpec, Usage
from lunora_jobs.models.messages import assistant_message, tool_message
from lunora_jobs.tools import ToolContext, ToolDefinition

from .results import StepResult, TextResult, ToolResult

MAX_STEPS_LIMIT = 100
"""A ceiling on ``max_steps`` so a typo cannot buy a thousand paid calls."""


def tool_map(tools: Sequence[ToolDefinition] | dict[str, ToolDefinition] | None) -> dict[str, ToolDefinition]:
    """Tools by name (a dict's keys name tools declared without one, as in ``define_agent``)."""
    if not tools:
        return {}
    items = list(tools.items()) if isinstance(tools, dict) else [(None, t) for t in tools]
    named: dict[str, ToolDefinition] = {}
    for key, definition in items:
        if not isinstance(definition, ToolDefinition):
            raise ConfigurationError(
                f"tools must be @tool / define_tool definitions, got {type(definition).__name__}."
            )
        if not definition.name and key is None:
            raise ConfigurationError("A tool without a name needs one: pass tools as {'name': tool}.")
        if not definition.name and key is not None:
            definition = dataclasses.replace(definition, name=key)
        if definition.name in named:
            raise ConfigurationError(f"Two tools are named {definition.name!r}; rename one of them.")
        named[definition.name] = definition
    return named


class ToolRounds:
    """State of one helper call's loop (see the module docstring)."""

    def __init__(
        self,
        messages: list[dict[str, Any]],
        tools: dict[str, ToolDefinition],
        *,
        max_steps: int,
        tool_choice: ToolChoice,
        context: ToolContext | None,
    ) -> None:
        if not 1 <= max_steps <= MAX_STEPS_LIMIT:
            raise ConfigurationError(f"max_steps must be between 1 and {MAX_STEPS_LIMIT}, got {max_steps}.")
        self.messages = messages
        self.tools = tools
        self.specs: list[ToolSpec] = [t.spec() for t in tools.values()]
        self.tool_choice: ToolChoice = tool_choice if tools else "auto"
        self.max_steps = max_steps
        self.steps: list[StepResult] = []
        self.added: list[dict[str, Any]] = []
        self._context = context
        self._call_id = f"ai-{uuid.uuid4().hex}"

    def finish_step(self, turn: ModelTurn) -> bool:
        """Record ``turn``, run its tool calls; True when another model call should follow."""
        results = [self._run(call) for call in turn.tool_calls] if self.tools else []
        self.steps.append(
            StepResult(turn.text, list(turn.tool_calls), results, turn.usage, turn.finish_reason, turn.model)
        )
        added = [assistant_message(turn)]
        added += [tool_message(r.call.id, r.output) for r in results]
        self.messages = [*self.messages, *added]
        self.added += added
        return bool(results) and len(self.steps) < self.max_steps

    def result(self) -> TextResult:
        """The loop's outcome (after the last ``finish_step``)."""
        last = self.steps[-1]
        usage = sum((s.usage for s in self.steps), Usage())
        return TextResult(
            text=last.text or "", finish_reason=last.finish_reason, usage=usage, steps=list(self.steps),
            messages=list(self.added), model=last.model,
        )

    def _run(self, call: ToolCall) -> ToolResult:
        definition = self.tools.get(call.name)
        if definition is None:
            names = ", ".join(self.tools)
            return ToolResult(call, f"Unknown tool '{call.name}'. Available tools: {names}.", is_error=True)
        if call.raw_arguments is not None:
            return ToolResult(
                call,
                f"Invalid input for tool '{call.name}': the arguments are not valid JSON "
                f"({call.raw_arguments[:200]!r}). Call the tool again with a JSON object.",
                is_error=True,
            )
        try:
            definition.validate(call.arguments)
        except ToolInputError as exc:
            return ToolResult(call, str(exc), is_error=True)
        if definition.requires_approval(call.arguments):
            raise ToolApprovalUnavailableError(
                f"Tool {call.name!r} needs approval for this call, but generate_text runs tools inline "
                "with no one to approve; run it through an agent, or drop needs_approval."
            )
        return ToolResult(call, definition.execute(call.arguments, self._tool_context(call)))

    def _tool_context(self, call: ToolCall) -> ToolContext:
        key = f"tool:{call.name}:{call.id}"
        if self._context is not None:  # inside a tool or step: keep its run, thread, owner and state
            return dataclasses.replace(
                self._context, idempotency_key=f"{self._context.idempotency_key}/{key}", tool_call_id=call.id
            )
        return ToolContext(
            idempotency_key=key, run_id=self._call_id, thread_key="", owner=None, tool_call_id=call.id
        )
