"""Moving a run forward once a step's result is recorded: plan, dispatch, wait, finish or fail.

``hibernate`` parks a run on approval waits: the run and its thread move to ``awaiting_input`` (a
compare-and-set from ``running``, so a cancelled run is never revived) and each pending call is
recorded in ``agent_tool_calls`` as ``awaiting_approval``. Then the step simply returns: nothing is
queued, no lease is held — the run is only rows until a decision arrives (``approvals.py``).

Every function here is safe to call twice with the same facts (two tools finishing together, a
replay, the sweep): dispatches are deduped by the ledger claim, and finishing writes the same
values again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.handover import OPEN, TERMINAL, run_ended
from lunora_jobs.engine.ledger import CallMode, completed_turns, turn_facts
from lunora_jobs.engine.plan import Decision, StopReason, plan_turn
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.engine.steps import parse_step, tool_step, turn_step
from lunora_jobs.engine.turn import TurnResult
from lunora_jobs.loop import StepFinish, StopContext
from lunora_jobs.models.base import Usage
from lunora_jobs.store.records import RunRecord, StepRecord

log = logging.getLogger(__name__)

AWAITING_APPROVAL = "awaiting_approval"


def run_result_json(text: str | None, output: Any, usage: Usage, turns: int) -> dict[str, Any]:
    """What ``agent_runs.result`` holds for a finished run."""
    return {"text": text, "output": output, "usage": usage.to_json(), "turns": turns}


def advance_turn(
    deps: EngineDeps, run: RunRecord, agent: AgentDefinition, turn: int, result: TurnResult,
    steps: Sequence[StepRecord], mode: CallMode,
) -> Decision:
    """Plan what follows ``turn`` from the ledger rows ``steps`` and carry it out."""

    def stop_met() -> bool:
        if not agent.stop_when:
            return False
        context = StopContext([r.turn for r in completed_turns(steps)], turn)
        return any(condition(context) for condition in agent.stop_when)

    facts = turn_facts(run.id, turn, result, steps, max_turns=agent.max_turns, now=deps.now(), mode=mode)
    decision = plan_turn(facts, stop_met)
    settled = decision.finish is not None or any(t.kind == "turn" for t in decision.dispatch)
    if settled and result.turn.tool_calls:
        notify_step_finish(agent, turn, result, steps)
    if decision.dispatch:
        deps.dispatcher.dispatch(decision.dispatch)
    if decision.waits:
        hibernate(deps, run, result, decision.waits)
    if decision.finish is not None:
        finish_run(deps, run, agent, decision.finish, result)
    return decision


def hibernate(deps: EngineDeps, run: RunRecord, result: TurnResult, waits: Sequence[str]) -> None:
    """Park the run on ``waits``; idempotent (the sweep and late tools call it again)."""
    store = deps.store
    if store.transition_run(run.id, ("running",), status="awaiting_input"):
        store.patch_thread(run.thread_id, status="awaiting_input")
        deps.events.publish(run_info(run).thread_key,
                            {"type": "status", "status": "awaiting_input", "run_id": run.id})
    calls = {c.id: c for c in result.turn.tool_calls}
    for step in waits:
        call = calls.get(parse_step(step).call_id or "")
        if call is not None and store.get_tool_call(run.id, call.id) is None:
            store.upsert_tool_call(run.thread_id, run.id, call.id, name=call.name, input=call.arguments,
                                   status=AWAITING_APPROVAL)


def fan_in(
    deps: EngineDeps, run: RunRecord, agent: AgentDefinition, turn: int,
    steps: Sequence[StepRecord] | None = None,
) -> None:
    """After a tool step of ``turn`` completed: whoever sees every call settled moves the run on.

    ``steps``: the run's ledger when the caller read it AFTER its completion landed (the tool step
    reads it in the completion's round trip, ``reads.complete_and_read_ledger``); else read here.
    """
    if steps is None:
        steps = deps.store.list_steps(run.id)
    memo = turn_row(steps, turn)
    if memo is not None and memo.status == "completed":
        advance_turn(deps, run, agent, turn, TurnResult.from_json(memo.result), steps, mode="fan_in")


def notify_step_finish(
    agent: AgentDefinition, turn: int, result: TurnResult, steps: Sequence[StepRecord] = ()
) -> None:
    """Call ``on_step_finish`` (observability: at-least-once, and a failing callback never fails the run)."""
    if agent.on_step_finish is None:
        return
    by_name = {s.name: s for s in steps}
    tool_results: list[dict[str, Any]] = []
    for call in result.turn.tool_calls:
        if call.id in result.invalid:
            tool_results.append({"tool_call_id": call.id, "name": call.name,
                                 "output": result.invalid[call.id], "is_error": True})
            continue
        row = by_name.get(tool_step(call.name, call.id))
        memo = row.result if row is not None and isinstance(row.result, dict) else {}
        tool_results.append({"tool_call_id": call.id, "name": call.name,
                             "output": memo.get("output"), "is_error": bool(memo.get("is_error"))})
    try:
        agent.on_step_finish(StepFinish(turn, result.turn, tool_results))
    except Exception:
        log.exception("lunora: on_step_finish of agent %r raised; the run continues", agent.name)


def finish_run(
    deps: EngineDeps, run: RunRecord, agent: AgentDefinition, stopped: StopReason, last: TurnResult
) -> None:
    """Mark the run completed with its result and free the thread (outside a step's transaction)."""
    output = last.output
    if output is None and agent.output is not None and last.turn.text:
        try:  # a run stopped early may still have ended on a structured answer
            parsed = agent.output.parse(last.turn.text)
            dump = getattr(parsed, "model_dump", None)
            output = dump(mode="json") if callable(dump) else parsed
        except ValueError:
            output = None
    current = deps.store.get_run(run.id) or run
    if current.status in TERMINAL:
        return  # cancelled (or finished by a concurrent finisher) meanwhile: keep what is recorded
    usage = Usage(current.input_tokens, current.output_tokens)
    # Compare-and-set: a run cancelled meanwhile stays cancelled, and its thread is not ours to free.
    if not deps.store.transition_run(
        run.id, OPEN, status="completed", stopped=stopped,
        result=run_result_json(last.turn.text, output, usage, current.turns),
    ):
        return
    deps.store.patch_thread(run.thread_id, status="completed")
    deps.store.release_thread(run.thread_id, run.id)
    run_ended(deps, run, "completed")


def fail_run(deps: EngineDeps, run: RunRecord, error: str) -> None:
    """Mark the run failed with ``error`` and free the thread."""
    current = deps.store.get_run(run.id)
    if current is not None and current.status in TERMINAL:
        return
    log.warning("lunora: run %s failed: %s", run.id, error)
    if not deps.store.transition_run(run.id, OPEN, status="failed", error=error):
        return
    deps.store.patch_thread(run.thread_id, status="failed")
    deps.store.release_thread(run.thread_id, run.id)
    run_ended(deps, run, "failed")


def turn_row(steps: Sequence[StepRecord], turn: int) -> StepRecord | None:
    """The ledger row of ``llm:turn:<turn>``."""
    name = turn_step(turn)
    return next((s for s in steps if s.name == name), None)
