"""The work of one ``llm:turn:<n>`` step: prompt → model call → checked tool calls → completion.

Everything a replay must not redo happens here and is memoized in the turn's ledger result
(``TurnResult.to_json``): the compaction brief, the model's turn, repaired tool calls, the verdict on
invalid calls, the approval gates and the parsed structured output.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.prompt import prepare_prompt, replace_system
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.steps import assistant_position, message_key, tool_position, turn_step
from lunora_jobs.errors import ToolInputError
from lunora_jobs.loop import PrepareStepArgs, PrepareStepResult, RepairArgs
from lunora_jobs.models.base import Model, ModelTurn, ToolCall, ToolChoice, Usage
from lunora_jobs.models.messages import assistant_message
from lunora_jobs.store.records import MessageRecord, NewMessage, RunRecord, StepCompletion, UsageEntry


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What the ledger keeps for a turn: ``turn`` carries the (repaired) tool calls in call order."""

    turn: ModelTurn
    invalid: dict[str, str] = field(default_factory=dict)
    """call id → error text for calls answered with a tool-error message by the turn itself."""
    approvals: list[str] = field(default_factory=list)
    """call ids whose tool's ``needs_approval`` said yes."""
    brief: str | None = None
    output: Any = None
    output_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ledger form."""
        return {
            "turn": self.turn.to_json(), "invalid": self.invalid, "approvals": self.approvals,
            "brief": self.brief, "output": self.output, "output_error": self.output_error,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnResult:
        """Inverse of ``to_json``."""
        return cls(
            turn=ModelTurn.from_json(data["turn"]), invalid=dict(data.get("invalid") or {}),
            approvals=list(data.get("approvals") or []), brief=data.get("brief"),
            output=data.get("output"), output_error=data.get("output_error"),
        )


def run_turn(
    deps: EngineDeps, run: RunRecord, agent: AgentDefinition, number: int,
    history: Sequence[MessageRecord] | None = None,
) -> TurnResult:
    """Call the model for turn ``number`` and check its tool calls. No writes: the caller completes.

    ``history``: the thread's messages when the caller read them with its claim; else read here.
    """
    info = run_info(run)
    model = deps.model_for(agent)
    summarizer: Model | None = None
    if agent.compaction is not None:
        spec = agent.compaction.model
        if spec is None or (isinstance(spec, str) and deps.model_override is not None):
            summarizer = model  # a harness never reaches a real provider through a model string
        else:
            summarizer = deps.resolve(f"compaction:{agent.name}", spec)
    if history is None:
        history = deps.store.load_thread_for_turn(run.thread_id)
    prompt = prepare_prompt(info.instructions, history, agent.compaction, summarizer)
    messages = prompt.messages
    tool_choice: ToolChoice = "auto"
    active: list[str] | None = None
    if agent.prepare_step is not None:
        override = PrepareStepResult.coerce(
            agent.prepare_step(PrepareStepArgs(number, list(messages), model, agent.tools))
        )
        if isinstance(override.model, str):
            model = deps.resolve(f"prepare:{override.model}", override.model)
        elif override.model is not None:
            model = override.model
        messages = override.messages if override.messages is not None else messages
        if override.system is not None:
            messages = replace_system(messages, override.system)
        tool_choice = override.tool_choice if override.tool_choice is not None else tool_choice
        active = override.active_tools
    output_schema = agent.output.json_schema if agent.output is not None else None
    turn = model.generate(
        messages, tools=agent.tool_specs(active), tool_choice=tool_choice, output_schema=output_schema
    )
    if turn.model is None:
        turn = dataclasses.replace(turn, model=model.name)
    turn = dataclasses.replace(turn, usage=turn.usage + prompt.usage)
    calls, invalid = _check_calls(agent, turn.tool_calls)
    turn = dataclasses.replace(turn, tool_calls=calls)
    approvals = [
        c.id for c in calls if c.id not in invalid and agent.tools[c.name].requires_approval(c.arguments)
    ]
    output, output_error = None, None
    if agent.output is not None and not calls:
        try:
            parsed = agent.output.parse(turn.text)
            dump = getattr(parsed, "model_dump", None)
            output = dump(mode="json") if callable(dump) else parsed
        except ValueError as exc:  # OutputParseError, and pydantic's errors
            output_error = str(exc)
    return TurnResult(turn, invalid, approvals, prompt.brief, output, output_error)


def _check_calls(agent: AgentDefinition, calls: list[ToolCall]) -> tuple[list[ToolCall], dict[str, str]]:
    """Validate each call; give ``repair_tool_call`` one chance at a bad one (inside the memoized turn)."""
    checked: list[ToolCall] = []
    invalid: dict[str, str] = {}
    for call in calls:
        error = _call_error(agent, call)
        if error is not None and agent.repair_tool_call is not None:
            tool_def = agent.tools.get(call.name)
            fixed = agent.repair_tool_call(
                RepairArgs(call, error, agent.tools, tool_def.input_schema if tool_def else None)
            )
            if fixed is not None:
                # The id names the durable step; a repair may not change it.
                fixed = dataclasses.replace(fixed, id=call.id)
                if _call_error(agent, fixed) is None:
                    call, error = fixed, None
        checked.append(call)
        if error is not None:
            invalid[call.id] = str(error)
    return checked, invalid


def _call_error(agent: AgentDefinition, call: ToolCall) -> ToolInputError | None:
    tool_def = agent.tools.get(call.name)
    if tool_def is None:
        names = ", ".join(agent.tools) or "none"
        return ToolInputError(f"Unknown tool '{call.name}'. Available tools: {names}. Call one of those.")
    if call.raw_arguments is not None:
        return ToolInputError(
            f"Invalid input for tool '{call.name}': the arguments are not valid JSON "
            f"({call.raw_arguments[:200]!r}). Call the tool again with a JSON object."
        )
    try:
        tool_def.validate(call.arguments)
    except ToolInputError as exc:
        return exc
    return None


def turn_completion(
    run: RunRecord, number: int, result: TurnResult, run_patch: dict[str, Any],
    thread_patch: dict[str, Any] | None = None,
) -> StepCompletion:
    """The one transaction recording turn ``number``: assistant message, tool-error messages, usage."""
    turn = result.turn
    assistant = assistant_message(turn)
    messages = [
        NewMessage(
            key=message_key(run.id, "assistant", assistant_position(number)), role="assistant",
            content=turn.text, run_id=run.id, tool_calls=assistant.get("tool_calls"),
            metadata={"turn": number, "model": turn.model},
        )
    ]
    for index, call in enumerate(turn.tool_calls):
        if call.id in result.invalid:
            messages.append(NewMessage(
                key=message_key(run.id, "tool", tool_position(number, index)), role="tool",
                content=result.invalid[call.id], run_id=run.id, tool_call_id=call.id, name=call.name,
                metadata={"is_error": True, "turn": number},
            ))
    usage = _usage_entry(run, number, turn.model, turn.usage)
    return StepCompletion(
        result=result.to_json(), messages=messages, usage=usage,
        run_patch=run_patch, thread_patch=thread_patch,
    )


def _usage_entry(run: RunRecord, number: int, model: str | None, usage: Usage) -> UsageEntry:
    return UsageEntry(
        actor=run.owner, model=model, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens, cache_write_tokens=usage.cache_write_tokens,
        thread_id=run.thread_id, run_id=run.id, step=turn_step(number), cost_usd=usage.cost_usd,
    )
