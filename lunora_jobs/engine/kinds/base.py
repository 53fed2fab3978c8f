"""The seam for step kinds: what one kind of step does, asked by the pipeline at each stage.

A step kind is one module with one class (a ``StepKind`` subclass) and one registration
(``kinds/__init__.py``, or ``register_step_kind`` from an extension). The pipeline
(``engine/pipeline``) calls the kind's methods in this order and never the other way round — a
kind does not call the pipeline, dispatch, or plan:

1. claim stage: ``read`` (the run, and where the store can fuse them the claim and the reads the
   work needs), ``admit`` (checks before claiming: ``None`` to claim, else the outcome to stop with),
   ``claim`` (the ledger row); for a step found completed, ``replan`` (what to re-plan from its memo);
2. work stage: ``work`` (no writes: the result, its messages and patches as one ``StepCompletion``,
   and what the planner needs after it), or, once the attempts are spent, ``give_up``;
3. the complete, plan and dispatch stages are the same for every kind; a kind whose steps are waits
   (no task: a decision or an event resolves them) also says how a run ``park``\\s on one.

Example — a kind for ``deliver:<channel>`` steps (a channel reply)::

    class DeliverStep(StepKind):
        name, prefix, route = "deliver", "deliver:", "step"

        def work(self, deps: EngineDeps, state: StepState) -> Work:
            sent = send_reply(state.name.rest, state.run)
            return Work(StepCompletion(result={"sent": sent}))

    register_step_kind(DeliverStep())
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any, Literal

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.memo import TurnResult
from lunora_jobs.engine.plan import CallMode
from lunora_jobs.engine.steps import StepName
from lunora_jobs.store.records import MessageRecord, RunRecord, StepClaim, StepCompletion, StepRecord


@dataclass(frozen=True, slots=True)
class ReplanTurn:
    """Plan what follows turn ``turn`` from its memo ``result`` (None: the memo in the ledger rows)."""

    turn: int
    result: TurnResult | None
    mode: CallMode
    steps: tuple[StepRecord, ...] | None = None
    """The ledger rows to plan from when the step knows them already (None: the completion's read)."""
    resume: bool = False
    """The run was parked on a wait that is now resolved: it runs again before the plan is carried out."""


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The step's own completion ended the run (a final turn): nothing to plan, only to announce."""

    status: Literal["completed", "failed"]
    turn: int
    result: TurnResult


@dataclass(frozen=True, slots=True)
class RunFails:
    """The run must fail: a step was refused for good or ran out of attempts."""

    error: str


@dataclass(frozen=True, slots=True)
class Retry:
    """The attempt failed and may run again: re-dispatch the step."""

    task: StepTask


@dataclass(frozen=True, slots=True)
class DispatchNext:
    """The step is done and ``tasks`` follow it (a run-start memory read hands on to the next read,
    the last one to ``llm:turn:0``)."""

    tasks: tuple[StepTask, ...]


After = ReplanTurn | RunEnded | RunFails | Retry | DispatchNext
"""What a step hands the planner once it is recorded (or found recorded already)."""


ALL_ROWS: tuple[str, ...] | None = None
"""``Work.ledger``: read the run's whole ledger after the completion."""
NO_ROWS: tuple[str, ...] = ()
"""``Work.ledger``: read nothing after the completion (the default)."""


@dataclass(frozen=True, slots=True)
class Work:
    """What a step's work produced: the completion to record, and what to plan once it is recorded."""

    completion: StepCompletion
    then: After | None = None
    """What the planner looks at after the completion landed (None: nothing follows this step)."""
    ledger: tuple[str, ...] | None = NO_ROWS
    """Ledger rows the planner needs, read in the completion's round trip where the store can:
    ``NO_ROWS`` (default), a tuple of step names, or ``ALL_ROWS``."""


@dataclass(slots=True, eq=False)
class StepState:
    """One delivery of a step on its way through the pipeline; each stage fills in its part."""

    run_id: str
    step: str
    name: StepName
    kind: StepKind
    event: Mapping[str, Any] | None = None
    """What the step was delivered with besides its name (a decision for a wait), else None."""
    run: RunRecord | None = None
    agent: AgentDefinition | None = None
    latest: StepRecord | EllipsisType | None = ...
    """The run's latest turn row when read together with the run (``...``: not read)."""
    subject: Any = None
    """What the kind works on, found before the claim (a tool step's call, an approval's decision)."""
    claim: StepClaim | None = None
    history: list[MessageRecord] | None = None
    """The thread's messages when they were read with the claim (a turn's prompt)."""
    work: Work | None = None
    error: str | None = None
    """The work raised: ``Type: message``."""
    final: bool = False
    """With ``error``: no attempt is left (or the error is fatal): the run fails."""
    delay_ms: int = 0
    """With ``error`` and not ``final``: the backoff before the next attempt (``engine/backoff.py``)."""
    after: After | None = None
    ledger: list[StepRecord] = field(default_factory=list)
    """The run's ledger rows the planner needs (read with the completion where the store can)."""
    status: str = ""
    """How the delivery ended (``StepOutcome.status``); empty while the trip goes on."""
    result: Any = None
    """The step's recorded result (``StepOutcome.result``)."""


class StepKind:
    """Base class of the step kinds; the defaults suit a step that is one plain task.

    ``name``: the kind (hooks and logs say it); ``prefix``: its step names start with it; ``route``:
    how a dispatcher routes its tasks (``turn`` and ``tool`` have Celery tasks of their own, every
    other route goes to ``lunora.step``); ``wait``: the steps are waits resolved by an event, never
    dispatched as tasks; ``after_run_end``: the steps still run once the run ended (a reply delivery,
    post-run memory writes) — otherwise a step of an ended run answers with its memo or is skipped.
    """

    name: str = ""
    prefix: str = ""
    route: str = "step"
    wait: bool = False
    after_run_end: bool = False

    def parse(self, step: str) -> StepName | None:
        """The parsed name of ``step`` if it is of this kind, else None."""
        if step.startswith(self.prefix) and len(step) > len(self.prefix):
            return StepName(self.name, rest=step[len(self.prefix) :])
        return None

    def read(self, deps: EngineDeps, state: StepState) -> None:
        """Set ``state.run`` (None: no such run). May also set ``latest``, ``claim`` and ``history``
        when the store reads and claims in one round trip; a claim made here skips ``admit``."""
        state.run = deps.store.get_run(state.run_id)

    def admit(self, deps: EngineDeps, state: StepState) -> str | None:
        """Checks after the read: None to claim, or the outcome to stop with (``skipped``,
        ``waiting``). ``state.agent`` is set; may set ``state.subject``."""
        if self.wait and state.event is None:
            return "waiting"
        return None

    def claim(self, deps: EngineDeps, state: StepState) -> None:
        """Claim the ledger row: set ``state.claim`` (and ``history`` if read with it)."""
        assert state.run is not None and state.agent is not None
        state.claim = deps.store.claim_step(
            state.run_id, state.step, owner=deps.worker_id, lease_ms=deps.lease_ms(state.agent),
            max_attempts=state.agent.max_attempts,
        )

    def work(self, deps: EngineDeps, state: StepState) -> Work:
        """Do the step's work without writing; raise to fail the attempt."""
        return Work(StepCompletion(result=None))

    def give_up(self, deps: EngineDeps, state: StepState, error: str) -> Work | None:
        """The last attempt failed with ``error``: a ``Work`` to record instead of failing the run,
        or None to fail it."""
        return None

    def fatal(self, exc: Exception) -> bool:
        """Whether ``exc`` fails the run at once instead of being retried."""
        return False

    def replan(self, deps: EngineDeps, state: StepState) -> After | None:
        """The step was found completed (a redelivery): what to re-plan from its memo so whatever
        follows it is dispatched again if it was lost. None: nothing follows."""
        return None

    def park(self, deps: EngineDeps, run: RunRecord, result: TurnResult, step: str) -> None:
        """A run hibernates on wait ``step`` of this kind: record what the wait needs (waits only)."""
        raise NotImplementedError(f"{self.name!r} steps are not waits")
