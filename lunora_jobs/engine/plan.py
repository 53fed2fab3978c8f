"""What runs next — a pure function of ledger facts: the centre of the step pipeline.

Every step's trip passes here (``pipeline``: claim → work → complete → **plan** → dispatch; the plan
stage, ``pipeline/planning.py``, reads the facts out of the ledger rows and asks this module).
``plan_turn`` takes what the ledger says about a turn (its tool calls and the state of each call's
step) and answers with a ``Decision``: steps to dispatch, approval waits, how the run stops or why
it fails. It imports nothing that does I/O and reads and writes nothing, so the turn step, the last
finishing tool step, an approval and the sweep all reach the same answer from the same facts —
which is why a duplicate decision (two tools finishing together, a sweep racing a worker) only ever
duplicates a dispatch the ledger dedupes.

Example::

    >>> facts = TurnFacts("r1", turn=0, max_turns=8, calls=(CallFacts("c1", "get_weather", "todo"),))
    >>> plan_turn(facts, stop_met=lambda: False).dispatch
    (StepTask(run_id='r1', step='tool:get_weather:c1', kind='tool'),)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.steps import approval_step, child_step, tool_step, turn_step

StopReason = Literal["final", "maxTurns", "stopCondition", "cancelled"]
CallState = Literal["todo", "inflight", "done"]
"""``todo``: nobody is on it (no ledger row the caller trusts, or an expired lease) — dispatch it.
``inflight``: queued or under a live lease — leave it. ``done``: its tool message is persisted."""
CallMode = Literal["fan_in", "recover"]
"""How to read a tool call that has no ledger row yet: the turn step that just dispatched it and the
last finishing tool treat it as ``inflight`` (its task is queued), while a recovery (a replayed turn,
the sweep, an approval) treats it as ``todo`` (its message may be lost) — a duplicate dispatch costs
one claim that answers ``busy`` or ``completed``."""


@dataclass(frozen=True, slots=True)
class CallFacts:
    """One tool call of the turn, as the ledger sees it."""

    call_id: str
    name: str
    state: CallState
    needs_approval: bool = False
    approved: bool | None = None
    """The human decision once ``approval:<call_id>`` completed; None while it waits."""
    delegated: bool = False
    """The call runs as a child run (``agent_as_tool``): its tool step waits for ``child:<call_id>``."""
    child_ended: bool = False
    """``child:<call_id>`` completed: the child run ended and its answer is in the ledger."""
    waits: tuple[str, ...] = ()
    """A call gated part by part (``code_tool``): the approval waits of its undecided parts."""


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """The latest completed turn of a run. ``calls`` is in call order; invalid calls the turn step
    already answered with a tool-error message are passed as ``done``."""

    run_id: str
    turn: int
    max_turns: int
    calls: tuple[CallFacts, ...] = ()


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do next. At most one of ``finish`` / ``fail`` / (``dispatch`` or ``waits``) is
    meaningful: a finishing decision dispatches nothing."""

    dispatch: tuple[StepTask, ...] = ()
    waits: tuple[str, ...] = ()
    """Wait step names the run now hibernates on (no task, no lease)."""
    finish: StopReason | None = None
    fail: str | None = None
    """The run fails with this error (a step refused for good, or out of attempts)."""
    settled: bool = False
    """The turn planned from is over (its calls are all answered): ``on_step_finish`` reports it."""

    @property
    def idle(self) -> bool:
        """True when nothing is to be done by this caller (other steps are still in flight)."""
        return not self.dispatch and not self.waits and self.finish is None and self.fail is None


def plan_turn(facts: TurnFacts, stop_met: Callable[[], bool]) -> Decision:
    """Decide what follows turn ``facts.turn``.

    - no tool calls: the model answered — finish ``final``;
    - calls needing approval without a decision: wait on ``approval:<call_id>``;
    - delegated calls (not rejected) whose child run has not ended: wait on ``child:<call_id>``;
    - calls nobody runs (``todo``): dispatch their ``tool:<name>:<call_id>`` steps, in call order;
    - every call ``done``: finish ``stopCondition`` if ``stop_met()``, ``maxTurns`` if the cap is
      reached, else dispatch the next turn. ``stop_met`` is only called in this last case.
    """
    if not facts.calls:
        return Decision(finish="final")
    dispatch: list[StepTask] = []
    waits: list[str] = []
    settled = True
    for call in facts.calls:
        if call.state == "done":
            continue
        settled = False
        if call.needs_approval and call.approved is None:
            waits.extend(call.waits or (approval_step(call.call_id),))
        elif call.delegated and call.approved is not False and not call.child_ended:
            waits.append(child_step(call.call_id))
        elif call.state == "todo":
            dispatch.append(StepTask(facts.run_id, tool_step(call.name, call.call_id), "tool"))
    if not settled:
        return Decision(dispatch=tuple(dispatch), waits=tuple(waits))
    if stop_met():
        return Decision(finish="stopCondition")
    if facts.turn + 1 >= facts.max_turns:
        return Decision(finish="maxTurns")
    return Decision(dispatch=(StepTask(facts.run_id, turn_step(facts.turn + 1), "turn"),))


def plan_start(run_id: str, reads: Sequence[str] = ()) -> Decision:
    """The first step of a run: its first run-start memory read (``reads``, in order), else turn 0."""
    if reads:
        return Decision(dispatch=(StepTask(run_id, reads[0], "memory"),))
    return Decision(dispatch=(StepTask(run_id, turn_step(0), "turn"),))


def plan_after_read(run_id: str, reads: Sequence[str], step: str) -> Decision:
    """What follows run-start memory read ``step``: the next of ``reads``, after the last turn 0."""
    later = list(reads[reads.index(step) + 1 :]) if step in reads else []
    return plan_start(run_id, later)
