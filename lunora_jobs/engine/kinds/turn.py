"""The turn kind: ``llm:turn:<n>`` — prompt → model call → checked tool calls → completion.

Everything a replay must not redo happens here and is memoized in the turn's ledger result
(``memo.TurnResult``): the compaction brief, the model's turn, repaired tool calls, the verdict on
invalid calls, the approval gates and the parsed structured output. A turn without tool calls ends
the run in its own completion (result, status and the thread's release in the same write); a turn
with calls hands the planner its memo, which fans the calls out.

Before the claim, the run read, the claim and the thread history ride in one round trip where the
store can (``fused.read_run_and_claim_turn``); turn ``n`` is only claimed once ``n`` turns completed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any, TypeGuard

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.deltas import TurnDeltas
from lunora_jobs.engine.fused import claim_with_history, read_run, read_run_and_claim_turn
from lunora_jobs.engine.kinds.base import (
    ALL_ROWS,
    NO_ROWS,
    After,
    ReplanTurn,
    RunEnded,
    StepKind,
    StepState,
    Work,
)
from lunora_jobs.engine.memo import TurnResult
from lunora_jobs.engine.prompt import prepare_prompt, replace_system
from lunora_jobs.engine.runinfo import run_info, run_result_json
from lunora_jobs.engine.shape import recorded_tools
from lunora_jobs.engine.steps import (
    TURN_PREFIX,
    StepName,
    assistant_position,
    message_key,
    tool_position,
    turn_number,
    turn_step,
)
from lunora_jobs.errors import (
    AgentChangedError,
    ConfigurationError,
    ModelResponseError,
    QuotaExceededError,
    ToolInputError,
)
from lunora_jobs.loop import PrepareStepArgs, PrepareStepResult, RepairArgs
from lunora_jobs.memory.inject import with_memory
from lunora_jobs.models.base import Model, ModelTurn, ToolCall, ToolChoice, ToolSpec, Usage
from lunora_jobs.models.messages import assistant_message
from lunora_jobs.models.streaming import StreamingModel, TextDelta, TurnDone
from lunora_jobs.store.records import MessageRecord, NewMessage, RunRecord, StepCompletion, UsageEntry

log = logging.getLogger(__name__)


class TurnStep(StepKind):
    """``llm:turn:<n>``: one model call."""

    name, prefix, route = "turn", TURN_PREFIX, "turn"

    def parse(self, step: str) -> StepName | None:
        """``StepName("turn", turn=n)`` for ``llm:turn:<n>``."""
        number = turn_number(step)
        return None if number is None else StepName("turn", turn=number)

    def read(self, deps: EngineDeps, state: StepState) -> None:
        """The run; with a fusing store also the claim (conditioned in SQL on ``admit``'s checks)
        and the history, in one round trip."""
        assert state.name.turn is not None
        fused = read_run_and_claim_turn(deps, state.run_id, state.step, state.name.turn)
        if fused is not None:
            state.run, state.claim, state.history = fused
        else:
            state.run, state.latest = read_run(deps.store, state.run_id, state.step)

    def admit(self, deps: EngineDeps, state: StepState) -> str | None:
        """Turn n only follows n completed turns: an early or bogus delivery must not run the model."""
        assert state.run is not None and state.name.turn is not None
        if state.name.turn > state.run.turns:
            log.warning("lunora: ignoring %s of run %s: only %d turns completed", state.step, state.run_id,
                        state.run.turns)
            return "skipped"
        return None

    def claim(self, deps: EngineDeps, state: StepState) -> None:
        """The claim, and the history its prompt is built from in the same round trip."""
        assert state.run is not None and state.agent is not None
        state.claim, state.history = claim_with_history(
            deps.store, state.run, state.step, owner=deps.worker_id, lease_ms=deps.lease_ms(state.agent),
            max_attempts=state.agent.max_attempts,
        )

    def work(self, deps: EngineDeps, state: StepState) -> Work:
        """Call the model; a final answer ends the run in this completion."""
        run, agent, claim, number = state.run, state.agent, state.claim, state.name.turn
        assert run is not None and agent is not None and claim is not None and number is not None
        deltas = None
        if deps.settings.stream_deltas:  # fenced by the claim's generation (see engine/deltas.py)
            deltas = TurnDeltas(deps.events, run_info(run).thread_key, run_id=run.id, turn=number,
                                attempt=claim.step.attempt, generation=claim.step.generation)
        if deps.quotas is not None:  # one aggregate query, only for an app with quotas
            deps.quotas.enforce(run.owner, run.tenant)
        result = run_turn(deps, run, agent, number, state.history, deltas)
        usage = result.turn.usage
        run_patch: dict[str, Any] = {"add_turns": 1, "add_input_tokens": usage.input_tokens,
                                     "add_output_tokens": usage.output_tokens}
        thread_patch: dict[str, Any] = {"add_input_tokens": usage.input_tokens,
                                        "add_output_tokens": usage.output_tokens}
        if not result.turn.tool_calls:  # a run cancelled meanwhile: the store refuses this completion
            total = Usage(run.input_tokens, run.output_tokens) + usage
            if result.output_error is not None:
                run_patch.update(status="failed", error=f"OutputParseError: {result.output_error}",
                                 result=run_result_json(result.turn.text, None, total, number + 1))
                thread_patch.update(status="failed", active_run_id=None)
                ended = RunEnded("failed", number, result)
            else:
                run_patch.update(status="completed", stopped="final",
                                 result=run_result_json(result.turn.text, result.output, total, number + 1))
                thread_patch.update(status="completed", active_run_id=None)
                ended = RunEnded("completed", number, result)
            return Work(turn_completion(run, number, result, run_patch, thread_patch), ended)
        completion = turn_completion(run, number, result, run_patch, thread_patch)
        # Fresh turn: no tool step has a row yet, so every valid call is dispatched ("recover").
        if result.invalid and len(result.invalid) == len(result.turn.tool_calls):
            # All answered inline: stop_when needs the turns, so the planner reads the whole ledger.
            return Work(completion, ReplanTurn(number, result, "recover"), ALL_ROWS)
        rows = (claim.step,) if result.invalid else ()
        return Work(completion, ReplanTurn(number, result, "recover", rows), NO_ROWS)

    def fatal(self, exc: Exception) -> bool:
        """A configuration error (no such model, no key), an incompatible deploy or a quota reached
        fails the run at once (a usage read that failed is retried: ``QuotaUnavailableError``)."""
        return isinstance(exc, ConfigurationError | AgentChangedError | QuotaExceededError)

    def replan(self, deps: EngineDeps, state: StepState) -> After | None:
        """A completed turn delivered again: dispatch its calls again if they were lost."""
        assert state.claim is not None and state.name.turn is not None
        result = TurnResult.from_json(state.claim.step.result)
        return ReplanTurn(state.name.turn, result, "recover") if result.turn.tool_calls else None


def run_turn(
    deps: EngineDeps, run: RunRecord, agent: AgentDefinition, number: int,
    history: Sequence[MessageRecord] | None = None, deltas: TurnDeltas | None = None,
) -> TurnResult:
    """Call the model for turn ``number`` and check its tool calls. No writes: the caller completes.

    ``history``: the thread's messages when the caller read them with its claim; else read here.
    ``deltas``: where a streaming model's text goes while it runs (token streaming); None: no stream.
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
    system = info.instructions
    recorded: dict[str, Any] = {}
    if agent.memory_reads:  # the run-start reads' recorded contexts (memoized: never searched here)
        recorded = {name: row.result for name in agent.memory_reads
                    if (row := deps.store.get_step(run.id, name)) is not None and row.status == "completed"}
        system = with_memory(system, agent.memories, recorded)
    prompt = prepare_prompt(system, history, agent.compaction, summarizer)
    messages = prompt.messages
    tool_choice: ToolChoice = "auto"
    active: Sequence[str] | None = agent.active_tools
    if agent.prepare_step is not None:
        override = PrepareStepResult.coerce(
            agent.prepare_step(PrepareStepArgs(number, list(messages), model, agent.tools))
        )
        if isinstance(override.model, str):
            model = deps.resolve(f"prepare:{override.model}", override.model)
        elif override.model is not None:
            model = override.model
        messages = override.messages if override.messages is not None else messages
        if override.system is not None:  # replaces the instructions, never the memory context
            messages = replace_system(messages, with_memory(override.system, agent.memories, recorded) or "")
        tool_choice = override.tool_choice if override.tool_choice is not None else tool_choice
        active = override.active_tools if override.active_tools is not None else active
    # A deploy mid-run: offer only the tools the run started with, or fail if one of them changed.
    kept = recorded_tools(agent, info.version, info.tools, turn_step(number))
    if kept is not None:
        active = kept if active is None else [name for name in active if name in kept]
    output_schema = agent.output.json_schema if agent.output is not None else None
    turn = call_model(model, messages, agent.tool_specs(active), tool_choice, output_schema, deltas)
    if turn.model is None:
        turn = dataclasses.replace(turn, model=model.name)
    turn = dataclasses.replace(turn, usage=turn.usage + prompt.usage)
    calls, invalid = _check_calls(agent, turn.tool_calls)
    turn = dataclasses.replace(turn, tool_calls=calls)
    gated, parts = [], {}
    for c in calls:
        tool_def = agent.tools[c.name] if c.id not in invalid else None
        if tool_def is not None and tool_def.approval_parts is not None:  # gated part by part (code_tool)
            found = tool_def.approval_parts(c.arguments)
            if found:
                gated.append(c.id)
                parts[c.id] = found
        elif tool_def is not None and tool_def.requires_approval(c.arguments):
            gated.append(c.id)
    # Independent mode: gated calls become action proposals (whole) and nothing waits on them.
    independent = agent.action_approval_mode == "independent"
    approvals, proposals = ([], gated) if independent else (gated, [])
    if independent:
        parts = {}
    children = [c.id for c in calls if c.id not in invalid and c.id not in proposals
                and agent.tools[c.name].delegate is not None]
    output, output_error = None, None
    if agent.output is not None and not calls:
        try:
            parsed = agent.output.parse(turn.text)
            dump = getattr(parsed, "model_dump", None)
            output = dump(mode="json") if callable(dump) else parsed
        except ValueError as exc:  # OutputParseError, and pydantic's errors
            output_error = str(exc)
    return TurnResult(turn, invalid, approvals, prompt.brief, output, output_error, proposals, children,
                      parts)


def call_model(
    model: Model, messages: Sequence[dict[str, Any]], tools: Sequence[ToolSpec], tool_choice: ToolChoice,
    output_schema: dict[str, Any] | None, deltas: TurnDeltas | None,
) -> ModelTurn:
    """One model call: streamed into ``deltas`` when given and the model streams, else ``generate``.
    Either way the result is the one ``ModelTurn`` the ledger memoizes."""
    if deltas is None or not _streams(model):
        return model.generate(messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema)
    events = model.stream(messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema)
    try:
        for event in events:
            if isinstance(event, TextDelta):
                deltas.text(event.text)
            elif isinstance(event, TurnDone):
                return event.turn
    finally:
        deltas.close()
    raise ModelResponseError(f"model {model.name!r} ended its stream without the finished turn (TurnDone)")


_STREAMING: dict[type, bool] = {}
"""Whether a model class implements ``StreamingModel``: the Protocol's ``isinstance`` walks its
members on every call, once per turn otherwise."""


def _streams(model: Model) -> TypeGuard[StreamingModel]:
    kind = type(model)
    known = _STREAMING.get(kind)
    if known is None:
        known = _STREAMING[kind] = isinstance(model, StreamingModel)
    return known


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
        actor=run.owner, tenant=run.tenant, agent=run.agent, model=model, input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens, cache_write_tokens=usage.cache_write_tokens,
        thread_id=run.thread_id, run_id=run.id, step=turn_step(number), cost_usd=usage.cost_usd,
    )
