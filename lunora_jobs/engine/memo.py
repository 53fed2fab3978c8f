"""What the ledger keeps for a turn, and the facts read back out of ledger rows.

``turn_facts`` reads what the planner needs about a turn out of its memo and the ledger rows.

A turn's ledger result is its ``TurnResult`` (``to_json``): the model's turn with its (repaired)
tool calls in call order, which calls were invalid, which wait for approval, the compaction brief
and the parsed output. Everything that runs after the turn — its tool steps, approvals, the planner,
the sweep — reads the calls from this memo, never from a task message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lunora_jobs.engine.plan import CallFacts, CallMode, CallState, TurnFacts
from lunora_jobs.engine.steps import approval_step, child_step, part_id, tool_step, turn_number, turn_step
from lunora_jobs.loop import StopCondition, StopContext
from lunora_jobs.models.base import ModelTurn, ToolCall
from lunora_jobs.store.records import StepRecord


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What the ledger keeps for a turn: ``turn`` carries the (repaired) tool calls in call order."""

    turn: ModelTurn
    invalid: dict[str, str] = field(default_factory=dict)
    """call id → error text for calls answered with a tool-error message by the turn itself."""
    approvals: list[str] = field(default_factory=list)
    """call ids whose tool's ``needs_approval`` said yes (blocking mode: the run waits on them)."""
    brief: str | None = None
    output: Any = None
    output_error: str | None = None
    proposals: list[str] = field(default_factory=list)
    """call ids gated in ``action_approval_mode="independent"``: each becomes an action proposal
    and the run goes on (``engine/actions``)."""
    children: list[str] = field(default_factory=list)
    """call ids of delegated tools (``agent_as_tool``): each runs as a child run, waited on by
    ``child:<call_id>``."""
    parts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """call id → the parts of a gated call that wait for a decision each (``code_tool``'s gated
    steps, ``[{"id", "tool", "input"}]``); such a call is in ``approvals`` and waits on
    ``approval:<call_id>.<part id>`` for every part instead of one ``approval:<call_id>``."""

    def part(self, approval_id: str) -> tuple[ToolCall, dict[str, Any]] | None:
        """The call and the part an approval id (``<call_id>.<part>``) names, or None."""
        for call in self.turn.tool_calls:
            for part in self.parts.get(call.id, ()):
                if part_id(call.id, str(part.get("id"))) == approval_id:
                    return call, part
        return None

    def to_json(self) -> dict[str, Any]:
        """The ledger form."""
        return {
            "turn": self.turn.to_json(), "invalid": self.invalid, "approvals": self.approvals,
            "brief": self.brief, "output": self.output, "output_error": self.output_error,
            "proposals": self.proposals, "children": self.children, "parts": self.parts,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnResult:
        """Inverse of ``to_json``."""
        return cls(
            turn=ModelTurn.from_json(data["turn"]), invalid=dict(data.get("invalid") or {}),
            approvals=list(data.get("approvals") or []), brief=data.get("brief"),
            output=data.get("output"), output_error=data.get("output_error"),
            proposals=list(data.get("proposals") or []), children=list(data.get("children") or []),
            parts=dict(data.get("parts") or {}),
        )


@dataclass(frozen=True, slots=True)
class LocatedCall:
    """A tool call and where it sits: turn number and index in that turn's call list."""

    turn: int
    index: int
    call: ToolCall
    needs_approval: bool = False
    turn_calls: tuple[ToolCall, ...] = ()
    """Every call of that turn (what its fan-in looks up in the ledger)."""
    proposed: bool = False
    """Gated in independent mode: the tool step files an action proposal instead of running it."""
    delegated: bool = False
    """Runs as a child run (``agent_as_tool``): the tool step answers with the child's outcome."""
    parts: tuple[str, ...] = ()
    """The ids of this call's parts gated one by one (``TurnResult.parts``)."""
    turn_part_waits: tuple[str, ...] = ()
    """The approval waits of every gated part of the turn (what its fan-in reads besides the calls')."""


def locate_call(turn: int, result: TurnResult, call_id: str) -> LocatedCall | None:
    """The call ``call_id`` of turn ``turn`` with its index, or None."""
    for index, call in enumerate(result.turn.tool_calls):
        if call.id == call_id:
            parts = tuple(str(p.get("id")) for p in result.parts.get(call.id, ()))
            waits = tuple(approval_step(part_id(cid, str(p.get("id"))))
                          for cid, found in result.parts.items() for p in found) if result.parts else ()
            return LocatedCall(turn, index, call, call.id in result.approvals, tuple(result.turn.tool_calls),
                               call.id in result.proposals, call.id in result.children, parts, waits)
    return None


def fan_in_names(located: LocatedCall) -> list[str]:
    """The ledger rows a fan-in after a tool of ``located.turn`` reads: the turn, its tool steps and
    their approval decisions (the planner and ``on_step_finish`` look up nothing else)."""
    names = [turn_step(located.turn)]
    for call in located.turn_calls:
        names += [tool_step(call.name, call.id), approval_step(call.id), child_step(call.id)]
    return names + list(located.turn_part_waits)


def latest_turn(steps: Sequence[StepRecord]) -> tuple[int, StepRecord] | None:
    """The highest-numbered turn row of the ledger, or None before the first turn was claimed."""
    best: tuple[int, StepRecord] | None = None
    for step in steps:
        number = turn_number(step.name)
        if number is not None and (best is None or number > best[0]):
            best = (number, step)
    return best


def completed_turns(steps: Sequence[StepRecord]) -> list[TurnResult]:
    """Every completed turn's memo, by turn number (what ``StopContext.turns`` holds)."""
    found: list[tuple[int, StepRecord]] = []
    for step in steps:
        number = turn_number(step.name)
        if number is not None and step.status == "completed":
            found.append((number, step))
    found.sort(key=lambda item: item[0])
    return [TurnResult.from_json(step.result) for _, step in found]


def stop_condition_met(stop_when: Sequence[StopCondition], steps: Sequence[StepRecord], turn: int) -> bool:
    """Whether any of the agent's ``stop_when`` conditions holds after turn ``turn``."""
    if not stop_when:
        return False
    context = StopContext([r.turn for r in completed_turns(steps)], turn)
    return any(condition(context) for condition in stop_when)


def turn_row(steps: Sequence[StepRecord], turn: int) -> StepRecord | None:
    """The ledger row of ``llm:turn:<turn>``."""
    name = turn_step(turn)
    return next((s for s in steps if s.name == name), None)


def turn_memo(steps: Sequence[StepRecord], turn: int) -> TurnResult | None:
    """Turn ``turn``'s memo from the ledger rows ``steps``, or None while it is not completed."""
    row = turn_row(steps, turn)
    return TurnResult.from_json(row.result) if row is not None and row.status == "completed" else None


def turn_facts(
    run_id: str, turn: int, result: TurnResult, steps: Sequence[StepRecord], *, max_turns: int, now: int,
    mode: CallMode,
) -> TurnFacts:
    """The facts of turn ``turn`` for ``plan_turn``, read from its memo and the ledger rows."""
    by_name = {s.name: s for s in steps}
    calls: list[CallFacts] = []
    for call in result.turn.tool_calls:
        approved: bool | None = None
        decision = by_name.get(approval_step(call.id))
        if decision is not None and decision.status == "completed" and isinstance(decision.result, dict):
            approved = bool(decision.result.get("approved"))
        state: CallState
        if call.id in result.invalid:
            state = "done"
        else:
            state = _call_state(by_name.get(tool_step(call.name, call.id)), now, mode)
        waits: tuple[str, ...] = ()
        if call.id in result.parts:  # gated part by part: decided once every part is
            names = [approval_step(part_id(call.id, str(p.get("id")))) for p in result.parts[call.id]]
            waits = tuple(name for name in names if not _completed(by_name.get(name)))
            approved = None if waits else True
        child = by_name.get(child_step(call.id))
        calls.append(CallFacts(call.id, call.name, state, call.id in result.approvals, approved,
                               call.id in result.children, _completed(child), waits))
    return TurnFacts(run_id, turn, max_turns, tuple(calls))


def _completed(step: StepRecord | None) -> bool:
    return step is not None and step.status == "completed"


def _call_state(step: StepRecord | None, now: int, mode: CallMode) -> CallState:
    if step is None:
        return "todo" if mode == "recover" else "inflight"
    if step.status in ("completed", "failed"):
        return "done"
    if step.lease_expires_at > now:
        return "inflight"
    return "todo" if mode == "recover" else "inflight"
