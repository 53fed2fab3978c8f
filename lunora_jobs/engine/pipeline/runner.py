"""``Engine.execute``: one step's trip through the pipeline, each stage once, in order.

    claim ──▶ work ──▶ complete ──▶ plan ──▶ dispatch
    (claim.py) (work.py) (complete.py) (engine/plan.py) (dispatch.py)

The step's kind (``engine/kinds``) supplies what differs between a turn, a tool call, an approval
or a memory step; the stages are the same for all. A trip may end early: at the claim (``missing``,
``waiting``, ``skipped``, ``busy``), or skip the work (a redelivered completed step is re-planned
from its memo; an exhausted one fails the run) — but it never goes back to a stage it has left.
``plan.py`` is the pure centre: everything before it gathers facts, everything after it acts.

Round trips per step on the hot path (SqlStore on PostgreSQL + Celery on Redis), counted on the
wire and pinned by ``tests/integration/engine/test_engine_roundtrips.py`` (``bench/hotpath.py``
prints them with ms per step). Reads run in autocommit, the pool's pre-ping polls the socket, and
the fused store calls come from ``fused.py`` (any other store gets the plain calls):

- turn: 2 PostgreSQL — run read + claim + thread history read (ONE statement: the claim conditioned
  in SQL on the turn kind's checks; a claim not taken falls back to the checks and the plain claim,
  one round trip more); completion (ONE statement: step, thread seq/totals, messages, usage, run; a
  final turn frees the thread in it and the store refuses it if the run was cancelled meanwhile)
  — and 1 Redis: the enqueue of the whole fan-out with the live notice after it, pipelined (a
  final turn enqueues nothing: the notice alone).
- tool: 2 PostgreSQL — run + latest turn memo (one joined read; the claim's check finds that memo
  by a primary-key probe) + claim, ONE statement (claimed in
  SQL only if that memo holds the call, ungated; else the plain claim after the checks, one round
  trip more); completion + fan-in read of the turn's ledger rows (pipelined) — and 1 Redis: the
  live notice, pipelined after the next turn's enqueue when this was the turn's last tool.

The live notice (``engine/notices.py``, a PUBLISH when ``LUNORA_REDIS_URL`` is set) goes out after the
enqueue, so the next step's worker is not waiting for it: in the enqueue's round trip when the broker
is the same Redis server (``CeleryDispatcher``), else in a round trip of its own.

Finishing a run after tools (``stopCondition`` / ``maxTurns``) costs one run read and two updates.
A call gated by ``needs_approval`` adds one ledger read (is there a decision yet?) to its tool step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine import kinds
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.hooks import StepInfo, StepOutput
from lunora_jobs.engine.memo import TurnResult
from lunora_jobs.engine.notices import Notice, message_notice, publish
from lunora_jobs.engine.pipeline.claim import claim
from lunora_jobs.engine.pipeline.complete import complete
from lunora_jobs.engine.pipeline.dispatch import carry_out
from lunora_jobs.engine.pipeline.planning import plan_step
from lunora_jobs.engine.pipeline.work import work
from lunora_jobs.engine.plan import CallMode, Decision
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.store.records import JSON, RunRecord, StepRecord


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What ``execute`` did.

    ``status``: ``completed`` (ran and recorded), ``replayed`` (memo returned, nothing re-run),
    ``busy`` (another worker holds the lease), ``retry`` (failed, re-dispatched), ``failed`` (the run
    failed), ``lost`` (lease taken over; result dropped), ``skipped`` (run terminal / unknown step),
    ``waiting`` (a wait step: resolved by an event, not a task), ``missing`` (no such run).
    """

    status: str
    result: JSON = None


class Engine:
    """Executes steps. One per process; stateless between calls.

    Example::

        engine = Engine(deps)
        engine.execute(run_id, "llm:turn:0")
    """

    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps

    def execute(self, run_id: str, step: str, *, event: Mapping[str, Any] | None = None) -> StepOutcome:
        """Run (or replay) step ``step`` of run ``run_id``; ``event`` resolves a wait step."""
        deps = self.deps
        try:
            kind, name = kinds.resolve(step)
        except ValueError:
            if deps.store.get_run(run_id) is None:
                return StepOutcome("missing")
            raise
        state = kinds.StepState(run_id, step, name, kind, event)
        if claim(deps, state):
            info = self._started(state)
            try:
                self._work_and_complete(state)
                self._plan_and_dispatch(state, self._notice(state))
            except BaseException:
                if info is not None:
                    deps.hooks.step_finished(info, "error")
                raise
            if info is not None:
                output = StepOutput(state.result, state.error, state.subject, state.history)
                deps.hooks.step_output(info, output)
                deps.hooks.step_finished(info, state.status)
        elif state.after is not None:  # replayed or refused: no work, but the plan still stands
            complete(deps, state)
            self._plan_and_dispatch(state)
        return StepOutcome(state.status, state.result)

    def _work_and_complete(self, state: kinds.StepState) -> None:
        """The work and its completion under a kept-alive lease (``engine/leases.py``): renewed
        only if the step outlives a third of it, released once the result is recorded. A trip that
        raises out of here leaves its generation to a redelivery in this process (``reclaim``)."""
        deps = self.deps
        assert state.claim is not None and state.agent is not None
        row = state.claim.step
        deps.leases.hold(state.run_id, state.step, row.generation, deps.lease_ms(state.agent))
        ended = True
        try:
            work(deps, state)
            complete(deps, state)
            ended = False
        finally:
            deps.leases.release(state.run_id, state.step, ended=ended)

    def _started(self, state: kinds.StepState) -> StepInfo | None:
        hooks = self.deps.hooks
        if not hooks:
            return None
        assert state.run is not None and state.claim is not None
        row = state.claim.step
        about = run_info(state.run)
        info = StepInfo(state.run_id, state.step, state.kind.name, state.run.agent, state.run.thread_id,
                        row.attempt, row.generation, about.trace, about.thread_key)
        hooks.step_started(info)
        return info

    @staticmethod
    def _notice(state: kinds.StepState) -> Notice | None:
        """The live notice of a step that completed and wrote messages (``engine/notices.py``)."""
        if state.status != "completed" or state.run is None:
            return None
        return message_notice(state.run, state.kind.name, state.step)

    def _plan_and_dispatch(self, state: kinds.StepState, notice: Notice | None = None) -> None:
        run, agent = state.run, state.agent
        if state.after is None or run is None or agent is None:
            publish(self.deps, notice)
            return
        decision, after = plan_step(state.after, state.ledger, run_id=run.id, max_turns=agent.max_turns,
                                    now=self.deps.now(), stop_when=agent.stop_when)
        carry_out(self.deps, run, agent, decision, after, notice)


def replan(
    deps: EngineDeps, run: RunRecord, agent: AgentDefinition, turn: int, result: TurnResult,
    steps: Sequence[StepRecord], mode: CallMode, *, resume: bool = False,
) -> Decision:
    """Plan and carry out what follows turn ``turn`` outside a step (the sweep, a repair): the same
    plan and dispatch stages a step ends with. ``resume``: the run was parked; it runs again first."""
    after = kinds.ReplanTurn(turn, result, mode, tuple(steps), resume=resume)
    decision, planned = plan_step(after, steps, run_id=run.id, max_turns=agent.max_turns, now=deps.now(),
                                  stop_when=agent.stop_when)
    carry_out(deps, run, agent, decision, planned)
    return decision
