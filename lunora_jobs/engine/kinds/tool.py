"""The tool kind: ``tool:<name>:<call_id>`` — find the call, run the tool, build its message.

The call's arguments come from the memoized turn that made it (the ledger), never from the task
message. A call gated by ``needs_approval`` is only claimed once its ``approval:<call_id>`` decision
is in the ledger; a rejected call completes with a tool message saying so instead of running (the
model reads why on its next turn). Exceptions are retried through the ledger up to the agent's
``max_attempts``; after the last attempt the step completes with a tool-error message instead, so
the model sees the failure on its next turn and the run carries on (a run is never lost to a flaky
tool). A ``ToolError`` (an MCP server's error result, a bad code-script reference) is not retried:
the step completes at once with its message as an error result. A worker that dies mid-tool is
different: its lease expires, the claim is taken over, and after ``max_attempts`` claims the run
fails (the poison-step rule, in the claim stage).

A delegated call (``agent_as_tool``) runs nothing here: it is dispatched once its ``child:<call_id>``
wait completed (``kinds/child.py``) and answers with the child run's memoized outcome.

After its completion a tool step reads the ledger rows of its turn (in the same round trip where
the store can) and the planner fans in: whichever tool sees every call of the turn answered
dispatches the next turn.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import EllipsisType
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.actions.propose import propose
from lunora_jobs.engine.children import answer
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.fused import read_run, read_run_and_claim_tool
from lunora_jobs.engine.kinds.base import ALL_ROWS, After, ReplanTurn, StepKind, StepState, Work
from lunora_jobs.engine.memo import LocatedCall, TurnResult, fan_in_names, locate_call
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.shape import check_tool
from lunora_jobs.engine.steps import (
    TOOL_PREFIX,
    StepName,
    approval_step,
    child_step,
    message_key,
    parse_step,
    part_id,
    tool_position,
    turn_number,
    turn_step,
)
from lunora_jobs.engine.toolmemo import jsonable
from lunora_jobs.engine.toolrun import execute_tool
from lunora_jobs.errors import AgentChangedError, ProposalScopeError, ToolError
from lunora_jobs.models.messages import tool_message
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import NewMessage, RunRecord, StepCompletion, StepRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ToolCallSubject:
    """What a tool step works on: the call, and for a rejected gated call the answer instead of a run."""

    located: LocatedCall
    rejection: str | None = None
    decisions: dict[str, Any] | None = None
    """For a call gated part by part: part id → its decision memo (what ``ctx.approval`` reads)."""


class ToolStep(StepKind):
    """``tool:<name>:<call_id>``: one tool call."""

    name, prefix, route = "tool", TOOL_PREFIX, "tool"

    def parse(self, step: str) -> StepName | None:
        """``StepName("tool", tool_name=..., call_id=...)``."""
        if not step.startswith(TOOL_PREFIX):
            return None
        try:
            return parse_step(step)
        except ValueError:
            return None

    def read(self, deps: EngineDeps, state: StepState) -> None:
        """The run and its latest turn's memo in one query; with a fusing store also the claim, made
        in SQL only when that memo holds the call ungated."""
        assert state.name.call_id is not None
        fused = read_run_and_claim_tool(deps, state.run_id, state.step, state.name.call_id)
        if fused is None:
            state.run, state.latest = read_run(deps.store, state.run_id, state.step)
            return
        state.run, state.latest, claim = fused
        if claim is None or state.run is None or not isinstance(state.latest, StepRecord):
            return
        memo = TurnResult.from_json(state.latest.result)
        located = locate_call(state.run.turns - 1, memo, state.name.call_id)
        if located is None:  # pragma: no cover - the SQL condition found the call in this memo
            deps.store.fail_step(state.run_id, state.step, claim.step.generation,
                                 "call not found in its turn")
            return
        state.claim, state.subject = claim, ToolCallSubject(located)

    def admit(self, deps: EngineDeps, state: StepState) -> str | None:
        """The call must come from a turn of the run; a gated one waits for its decision."""
        assert state.run is not None and state.name.call_id is not None
        located = find_call(deps.store, state.run, state.name.call_id, state.latest)
        if located is None:
            log.warning("lunora: ignoring %s of run %s: no turn made that call", state.step, state.run_id)
            return "skipped"
        rejection, decisions = None, None
        if located.needs_approval and located.parts:  # each part decided on its own
            decisions = {}
            for part in located.parts:
                row = deps.store.get_step(state.run_id, approval_step(part_id(located.call.id, part)))
                if row is None or row.status != "completed":
                    return "waiting"
                decisions[part] = row.result if isinstance(row.result, dict) else {}
        elif located.needs_approval:
            decision = deps.store.get_step(state.run_id, approval_step(located.call.id))
            if decision is None or decision.status != "completed":
                return "waiting"  # a stray task never runs a gated tool before its decision
            memo = decision.result if isinstance(decision.result, dict) else {}
            if not memo.get("approved"):
                rejection = rejection_text(located, memo.get("reason"))
        elif located.delegated and not _child_ended(deps.store, state.run_id, located):
            return "waiting"  # a stray task never answers a delegated call before its child ended
        state.subject = ToolCallSubject(located, rejection, decisions)
        return None

    def work(self, deps: EngineDeps, state: StepState) -> Work:
        """Run the tool (or answer a rejected call); the planner then fans in over the turn's rows."""
        run, agent, subject = state.run, state.agent, state.subject
        assert run is not None and agent is not None and isinstance(subject, ToolCallSubject)
        if subject.rejection is not None:
            return self._done(run, agent, subject.located, subject.rejection, is_error=True)
        info = run_info(run)  # a deploy mid-run that changed this tool fails the run (engine/shape.py)
        check_tool(agent, info.version, info.tools, subject.located.call.name, state.step)
        if subject.located.proposed:  # independent mode: file a proposal, the run goes on
            try:
                proposed = propose(deps, run, agent, subject.located)
            except ProposalScopeError as exc:
                return self._done(run, agent, subject.located, f"Error: {exc}", is_error=True)
            return self._done(run, agent, subject.located, proposed.text,
                              metadata={"proposal_id": proposed.proposal_id})
        if subject.located.delegated:  # agent_as_tool: the child run's answer, memoized by child:<id>
            output, is_error, child = delegated_answer(deps.store, run, agent, subject.located)
            return self._done(run, agent, subject.located, output, is_error=is_error,
                              metadata={"child_run_id": child})
        try:
            output = execute_tool(deps, run, agent, subject.located, state.step, subject.decisions)
        except ToolError as exc:  # the model reads it; a retry cannot fix it
            return self._done(run, agent, subject.located, f"Error: {exc}", is_error=True)
        return self._done(run, agent, subject.located, output)

    def fatal(self, exc: Exception) -> bool:
        """A deploy that changed this tool mid-run fails the run (``engine/shape.py``)."""
        return isinstance(exc, AgentChangedError)

    def give_up(self, deps: EngineDeps, state: StepState, error: str) -> Work | None:
        """Out of attempts: the model sees the error as the call's result, and the run goes on —
        except after an incompatible deploy, which fails the run."""
        if error.startswith(f"{AgentChangedError.__name__}:"):
            return None
        run, agent, subject, claim = state.run, state.agent, state.subject, state.claim
        assert run is not None and agent is not None and claim is not None
        assert isinstance(subject, ToolCallSubject)
        log.warning("lunora: tool step %s of run %s failed %d times; the model sees the error",
                    state.step, run.id, claim.step.attempt)
        name, attempts = subject.located.call.name, claim.step.attempt
        text = f"Error: tool '{name}' failed after {attempts} attempts: {error}"
        return self._done(run, agent, subject.located, text, is_error=True)

    def replan(self, deps: EngineDeps, state: StepState) -> After | None:
        """A completed tool step delivered again: fan in again (the next turn may have been lost)."""
        subject = state.subject
        if not isinstance(subject, ToolCallSubject):
            return None
        return ReplanTurn(subject.located.turn, None, "fan_in")

    def _done(
        self, run: RunRecord, agent: AgentDefinition, located: LocatedCall, output: Any, *,
        is_error: bool = False, metadata: dict[str, Any] | None = None,
    ) -> Work:
        # stop_when reads every turn's memo: then the whole ledger, else only this turn's rows.
        rows = ALL_ROWS if agent.stop_when else tuple(fan_in_names(located))
        return Work(tool_result_completion(run, located, output, is_error=is_error, metadata=metadata),
                    ReplanTurn(located.turn, None, "fan_in"), rows)


def _child_ended(store: AgentStore, run_id: str, located: LocatedCall) -> bool:
    row = store.get_step(run_id, child_step(located.call.id))
    return row is not None and row.status == "completed"


def delegated_answer(
    store: AgentStore, run: RunRecord, agent: AgentDefinition, located: LocatedCall
) -> tuple[Any, bool, str | None]:
    """A delegated call's result (output, is_error, child run id) from its ``child:<call_id>`` memo."""
    row = store.get_step(run.id, child_step(located.call.id))
    if row is None or row.status != "completed" or not isinstance(row.result, dict):
        raise RuntimeError(f"the child run of call {located.call.id!r} has not ended yet")
    tool = agent.tools.get(located.call.name)
    name = tool.delegate.name if tool is not None and tool.delegate is not None else located.call.name
    output, is_error = answer(row.result, name)
    return output, is_error, row.result.get("child_run_id")


def rejection_text(located: LocatedCall, reason: str | None) -> str:
    """The tool message of a call a human rejected."""
    text = f"The tool call '{located.call.name}' was rejected by a human reviewer"
    return text + (f": {reason}" if reason else ".")


def find_call(
    store: AgentStore, run: RunRecord, call_id: str, latest: StepRecord | EllipsisType | None = ...
) -> LocatedCall | None:
    """Where tool call ``call_id`` of ``run`` was made, read from the memo of the turn that made it.

    ``latest``: the ledger row of the run's latest turn when the caller already read it (with the
    run, in one round trip: ``fused.read_run``); by default it is read here.
    """
    # The run's latest completed turn made it (a turn's tools settle before the next turn runs).
    if run.turns > 0:
        memo = store.get_step(run.id, turn_step(run.turns - 1)) if latest is ... else latest
        if memo is not None and memo.status == "completed":
            found = locate_call(run.turns - 1, TurnResult.from_json(memo.result), call_id)
            if found is not None:
                return found
    for step in store.list_steps(run.id):  # slow path: a late replay of an older turn's tool
        number = turn_number(step.name)
        if number is not None and step.status == "completed":
            found = locate_call(number, TurnResult.from_json(step.result), call_id)
            if found is not None:
                return found
    return None


def tool_result_completion(
    run: RunRecord, located: LocatedCall, output: Any, *, is_error: bool = False,
    metadata: dict[str, Any] | None = None,
) -> StepCompletion:
    """The tool message (keyed by turn and call index) and the ledger result, in one completion;
    ``metadata`` is added to the message's (a proposal id, for one)."""
    content = tool_message(located.call.id, output)["content"]
    message = NewMessage(
        key=message_key(run.id, "tool", tool_position(located.turn, located.index)), role="tool",
        content=content, run_id=run.id, tool_call_id=located.call.id, name=located.call.name,
        metadata={"is_error": is_error, "turn": located.turn, **(metadata or {})},
    )
    return StepCompletion(result={"output": jsonable(output), "is_error": is_error}, messages=[message])
