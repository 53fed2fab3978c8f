"""Run one step of a run: the durable loop's single entry point (``Engine.execute``).

Executing ``(run_id, step)``:

1. read the run (terminal run: answer with the memo, start nothing);
2. claim the ledger row — insert it, take over an expired lease (``attempt+1``, new generation), or
   learn it is ``completed`` (replay: re-plan from the memo, so a successor lost with a crashed
   worker is dispatched again), ``busy``, ``exhausted`` or ``failed`` (fail the run). The claim is
   one conditional upsert, so the database alone picks one winner among concurrent deliveries: no
   run lock is taken (it cost two Redis round trips a step and decided nothing the claim does not);
3. do the work (model call or tool);
4. ``complete_step``: result + messages + usage + run/thread patches in ONE transaction, fenced by
   the claim's generation (a worker whose lease was taken over writes nothing);
5. plan (``plan.py``) and dispatch: a turn fans its tool calls out as parallel tasks; each tool
   re-reads the ledger after completing, and whichever sees every call done dispatches the next turn.

Round trips per step on the hot path (SqlStore on PostgreSQL + Celery on Redis), counted on the
wire and pinned by ``tests/integration/engine/test_engine_roundtrips.py`` (``bench/hotpath.py``
prints them with ms per step). Reads run in autocommit, the pool's pre-ping polls the socket, and
the fused store calls come from ``reads.py`` (any other store gets the plain calls):

- turn: 2 PostgreSQL — run read + claim + thread history read (pipelined: ``reads.read_run_and_claim_turn``,
  the claim conditioned in SQL on the run checks below; a claim not taken falls back to the run
  checks and the plain claim, one round trip more); completion (ONE statement:
  step, thread seq/totals, messages, usage, run; a final turn frees the thread in it and the store
  refuses it if the run was cancelled meanwhile) — and 1 Redis: one enqueue of the whole fan-out
  (one pipelined broker round trip; none after a final turn).
- tool: 2 PostgreSQL — run + latest turn memo (one joined read) + claim, pipelined
  (``reads.read_run_and_claim_tool``: claimed in SQL only if that memo holds the call, ungated; else
  the plain claim after the checks, one round trip more); completion + fan-in read of the ledger
  (pipelined) — and, only from the last tool of a turn, 1 Redis: the next turn's enqueue.

Finishing a run after tools (``stopCondition`` / ``maxTurns``) costs one run read and two updates.
A call gated by ``needs_approval`` adds one ledger read (is there a decision yet?) to its tool step.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import EllipsisType
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.advance import advance_turn, fail_run, fan_in, notify_step_finish, run_result_json
from lunora_jobs.engine.cancel import release_if_cancelled
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.dispatch import StepKind, StepTask
from lunora_jobs.engine.handover import run_ended
from lunora_jobs.engine.ledger import fan_in_names, find_call, locate_call
from lunora_jobs.engine.reads import (
    claim_with_history,
    complete_and_read_ledger,
    read_run,
    read_run_and_claim_tool,
    read_run_and_claim_turn,
)
from lunora_jobs.engine.steps import StepName, approval_step, parse_step
from lunora_jobs.engine.tool import LocatedCall, execute_tool, tool_result_completion
from lunora_jobs.engine.turn import TurnResult, run_turn, turn_completion
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.models.base import Usage
from lunora_jobs.store.records import JSON, MessageRecord, RunRecord, StepClaim, StepCompletion, StepRecord

log = logging.getLogger(__name__)

TERMINAL = frozenset({"completed", "failed", "cancelled"})
History = list[MessageRecord] | None


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What ``execute`` did.

    ``status``: ``completed`` (ran and recorded), ``replayed`` (memo returned, nothing re-run),
    ``busy`` (another worker holds the lease), ``retry`` (failed, re-dispatched), ``failed`` (the run
    failed), ``lost`` (lease taken over; result dropped), ``skipped`` (run terminal / unknown step),
    ``waiting`` (an approval step: resolved by a decision, not a task), ``missing`` (no such run).
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

    def execute(self, run_id: str, step: str) -> StepOutcome:
        """Run (or replay) step ``step`` of run ``run_id``."""
        store = self.deps.store
        try:
            name = parse_step(step)
        except ValueError:
            if store.get_run(run_id) is None:
                return StepOutcome("missing")
            raise
        run, latest, claimed, history = self._read_and_claim(run_id, step, name)
        if run is None:
            return StepOutcome("missing")
        if claimed is not None:  # the claim's SQL held every check made below (see reads.py)
            found = None
            if name.kind == "tool" and isinstance(latest, StepRecord) and name.call_id is not None:
                found = locate_call(run.turns - 1, TurnResult.from_json(latest.result), name.call_id)
                if found is None:  # pragma: no cover - the SQL condition found the call in this memo
                    store.fail_step(run_id, step, claimed.step.generation, "call not found in its turn")
                    return StepOutcome("skipped")
            return self._on_claim(run, self.deps.agent(run.agent), name, step, claimed, found, history)
        if name.kind == "approval":
            return StepOutcome("waiting")
        if run.status in TERMINAL:
            memo = store.get_step(run_id, step)
            if memo is not None and memo.status == "completed":
                return StepOutcome("replayed", memo.result)
            return StepOutcome("skipped")
        agent = self.deps.agent(run.agent)
        if name.turn is not None and name.turn > run.turns:
            # Turn n only follows n completed turns: an early or bogus delivery must not run the model.
            log.warning("lunora: ignoring %s of run %s: only %d turns completed", step, run_id, run.turns)
            return StepOutcome("skipped")
        located: LocatedCall | None = None
        if name.kind == "tool" and name.call_id is not None:
            located = find_call(self.deps.store, run, name.call_id, latest)
            if located is None:
                log.warning("lunora: ignoring %s of run %s: no turn made that call", step, run_id)
                return StepOutcome("skipped")
            if located.needs_approval and not self._decided(run.id, located):
                return StepOutcome("waiting")  # a stray task never runs a gated tool before its decision
        lease = self.deps.lease_ms(agent)
        # No run lock around the claim: the claim is one conditional upsert, so the database already
        # picks one winner among concurrent deliveries; a lock here cost two Redis round trips a step
        # and saved nothing (the work itself runs outside any lock either way).
        if name.kind == "turn":  # the turn's history read rides in the claim's round trip
            claim, history = claim_with_history(
                store, run, step, owner=self.deps.worker_id, lease_ms=lease, max_attempts=agent.max_attempts
            )
        else:
            claim = store.claim_step(
                run_id, step, owner=self.deps.worker_id, lease_ms=lease, max_attempts=agent.max_attempts
            )
        return self._on_claim(run, agent, name, step, claim, located, history)

    def _read_and_claim(
        self, run_id: str, step: str, name: StepName
    ) -> tuple[RunRecord | None, StepRecord | EllipsisType | None, StepClaim | None, History]:
        """The run (+ a tool's turn memo), and where the store can fuse it, the claim (+ a turn's
        history) in the same round trip. A None claim: check the run and claim the plain way."""
        if name.kind == "turn" and name.turn is not None:
            turn = read_run_and_claim_turn(self.deps, run_id, step, name.turn)
            if turn is not None:
                return turn[0], ..., turn[1], turn[2]
        elif name.kind == "tool" and name.call_id is not None:
            tool = read_run_and_claim_tool(self.deps, run_id, step, name.call_id)
            if tool is not None:
                return tool[0], tool[1], tool[2], None
        run, latest = read_run(self.deps.store, run_id, step)  # a tool gets its turn's memo in the same query
        return run, latest, None, None

    def _on_claim(
        self, run: RunRecord, agent: AgentDefinition, name: StepName, step: str, claim: StepClaim,
        located: LocatedCall | None, history: list[MessageRecord] | None = None,
    ) -> StepOutcome:
        if claim.outcome == "busy":
            return StepOutcome("busy")
        if claim.outcome in ("exhausted", "failed"):
            detail = f": {claim.step.error}" if claim.step.error else ""
            if claim.outcome == "failed":
                error = f"step {step!r} failed{detail}"
            else:
                error = (f"StepExhaustedError: step {step!r} was attempted {claim.step.attempt} times "
                         f"without finishing (max_attempts={agent.max_attempts}){detail}")
            fail_run(self.deps, run, error)
            return StepOutcome("failed")
        if claim.outcome == "completed":
            self._recover(run, agent, name, claim.step, located)
            return StepOutcome("replayed", claim.step.result)
        if name.kind == "turn" and name.turn is not None:
            return self._turn(run, agent, name.turn, claim.step, history)
        if name.kind == "tool":
            return self._tool(run, agent, located, claim.step)
        # memory steps land with the memory tiers; record an empty result so the run moves on
        self.deps.store.complete_step(run.id, step, claim.step.generation, StepCompletion(result=None))
        return StepOutcome("completed")

    # -- turns ----------------------------------------------------------------------------------
    def _turn(
        self, run: RunRecord, agent: AgentDefinition, number: int, row: StepRecord,
        history: list[MessageRecord] | None = None,
    ) -> StepOutcome:
        try:
            result = run_turn(self.deps, run, agent, number, history)
        except Exception as exc:
            return self._failed_attempt(run, agent, row, exc, fatal=isinstance(exc, ConfigurationError))
        usage = result.turn.usage
        run_patch: dict[str, Any] = {"add_turns": 1, "add_input_tokens": usage.input_tokens,
                                     "add_output_tokens": usage.output_tokens}
        thread_patch: dict[str, Any] = {"add_input_tokens": usage.input_tokens,
                                        "add_output_tokens": usage.output_tokens}
        final = not result.turn.tool_calls
        if final:  # a run cancelled meanwhile: the store refuses this completion (see below)
            total = Usage(run.input_tokens, run.output_tokens) + usage
            if result.output_error is not None:
                run_patch.update(status="failed", error=f"OutputParseError: {result.output_error}",
                                 result=run_result_json(result.turn.text, None, total, number + 1))
                thread_patch.update(status="failed", active_run_id=None)
            else:
                run_patch.update(status="completed", stopped="final",
                                 result=run_result_json(result.turn.text, result.output, total, number + 1))
                thread_patch.update(status="completed", active_run_id=None)
        completion = turn_completion(run, number, result, run_patch, thread_patch)
        if not self.deps.store.complete_step(run.id, row.name, row.generation, completion):
            release_if_cancelled(self.deps, run.id, row.name, row.generation)
            return StepOutcome("lost")
        if final:
            notify_step_finish(agent, number, result)
            run_ended(self.deps, run, "failed" if result.output_error is not None else "completed")
            return StepOutcome("completed", completion.result)
        # Fresh turn: no tool step has a row yet, so every valid call is dispatched ("recover").
        steps = [row] if result.invalid else []
        if result.invalid and len(result.invalid) == len(result.turn.tool_calls):
            steps = self.deps.store.list_steps(run.id)  # all answered inline: stop_when needs the turns
        advance_turn(self.deps, run, agent, number, result, steps, mode="recover")
        return StepOutcome("completed", completion.result)

    # -- tools ----------------------------------------------------------------------------------
    def _tool(
        self, run: RunRecord, agent: AgentDefinition, located: LocatedCall | None, row: StepRecord
    ) -> StepOutcome:
        assert located is not None  # execute() skips calls no turn made
        try:
            output = execute_tool(self.deps, run, agent, located, row.name)
            completion = tool_result_completion(run, located, output)
        except Exception as exc:
            if row.attempt < agent.max_attempts:
                return self._failed_attempt(run, agent, row, exc, fatal=False)
            log.warning("lunora: tool step %s of run %s failed %d times; the model sees the error",
                        row.name, run.id, row.attempt)
            text = (f"Error: tool '{located.call.name}' failed after {row.attempt} attempts: "
                    f"{type(exc).__name__}: {exc}")
            completion = tool_result_completion(run, located, text, is_error=True)
        # The fan-in's ledger read rides in the completion's round trip where the store can do that.
        # stop_when reads every turn's memo: then the whole ledger, else only this turn's rows.
        names = None if agent.stop_when else fan_in_names(located)
        done, ledger = complete_and_read_ledger(
            self.deps.store, run.id, row.name, row.generation, completion, names
        )
        if not done:
            release_if_cancelled(self.deps, run.id, row.name, row.generation)
            return StepOutcome("lost")
        fan_in(self.deps, run, agent, located.turn, ledger)
        return StepOutcome("completed", completion.result)

    def _decided(self, run_id: str, located: LocatedCall) -> bool:
        decision = self.deps.store.get_step(run_id, approval_step(located.call.id))
        return decision is not None and decision.status == "completed"

    # -- shared -----------------------------------------------------------------------------------
    def _failed_attempt(
        self, run: RunRecord, agent: AgentDefinition, row: StepRecord, exc: Exception, *, fatal: bool
    ) -> StepOutcome:
        error = f"{type(exc).__name__}: {exc}"
        log.warning("lunora: step %s of run %s failed (attempt %d): %s", row.name, run.id, row.attempt, error)
        if fatal or row.attempt >= agent.max_attempts:
            self.deps.store.fail_step(run.id, row.name, row.generation, error, terminal=True)
            fail_run(self.deps, run, f"step {row.name!r} failed after {row.attempt} attempt(s): {error}")
            return StepOutcome("failed")
        if not self.deps.store.fail_step(run.id, row.name, row.generation, error):
            return StepOutcome("lost")
        kind: StepKind = "turn" if row.name.startswith("llm:") else "tool"
        self.deps.dispatcher.dispatch([StepTask(run.id, row.name, kind)])
        return StepOutcome("retry")

    def _recover(
        self, run: RunRecord, agent: AgentDefinition, name: StepName, row: StepRecord,
        located: LocatedCall | None,
    ) -> None:
        """A completed step was delivered again: make sure what follows it was dispatched."""
        if name.kind == "turn" and name.turn is not None:
            result = TurnResult.from_json(row.result)
            if result.turn.tool_calls:
                steps = self.deps.store.list_steps(run.id)
                advance_turn(self.deps, run, agent, name.turn, result, steps, mode="recover")
        elif located is not None:
            fan_in(self.deps, run, agent, located.turn)

