"""Stage 5 of a step: dispatch — carry out the planner's ``Decision``.

In this order: a run whose wait was just resolved runs again; ``on_step_finish`` hears about a
settled turn; the next steps are enqueued (tool calls of a turn fan out in one dispatch), with the
live notice of the step just completed (``notices.py``); the run parks on its waits; the run finishes
or fails; a notice that found no enqueue to ride with goes out last. Every action is safe to repeat
with the same facts (two tools finishing together, a replay, the sweep): dispatches are deduped by
the ledger claim, parking and finishing are compare-and-sets on the run's status.

Parking (``park``): the run and its thread move to ``awaiting_input`` in one statement (from
``running`` only, so a cancelled run is never revived) and each wait's kind records what it waits
for (an approval records the call as ``awaiting_approval``). Then the step simply returns: nothing
is queued, no lease is held — the run is only rows until an event resolves the wait.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.context import EngineDeps
from lunora_jobs.engine.handover import OPEN, TERMINAL, run_ended
from lunora_jobs.engine.kinds import After, ReplanTurn, RunEnded, kind_of
from lunora_jobs.engine.memo import TurnResult
from lunora_jobs.engine.notices import Notice, publish, send
from lunora_jobs.engine.plan import Decision, StopReason
from lunora_jobs.engine.runinfo import run_info, run_result_json
from lunora_jobs.engine.steps import tool_step
from lunora_jobs.loop import StepFinish
from lunora_jobs.models.base import Usage
from lunora_jobs.store.records import RunRecord, StepRecord

log = logging.getLogger(__name__)


def carry_out(
    deps: EngineDeps, run: RunRecord, agent: AgentDefinition, decision: Decision, after: After | None,
    notice: Notice | None = None,
) -> None:
    """Do what ``decision`` says about ``run``; ``after`` is what it was planned from (a
    ``ReplanTurn`` carries the turn's memo and ledger rows). ``notice``: the live notice of the step
    just completed, sent with the enqueue when there is one (``notices.send``), else at the end."""
    if not _carry_out(deps, run, agent, decision, after, notice):
        publish(deps, notice)


def _carry_out(
    deps: EngineDeps, run: RunRecord, agent: AgentDefinition, decision: Decision, after: After | None,
    notice: Notice | None,
) -> bool:
    """``carry_out``; True when ``notice`` went out with the enqueue."""
    if isinstance(after, RunEnded):
        notify_step_finish(agent, after.turn, after.result)
        run_ended(deps, run, after.status)
        return False
    result = after.result if isinstance(after, ReplanTurn) else None
    resume = isinstance(after, ReplanTurn) and after.resume
    if resume:
        deps.store.transition_run_and_thread(run.id, ("awaiting_input",), thread_status="running",
                                             status="running")
    if decision.settled and isinstance(after, ReplanTurn) and result is not None:
        notify_step_finish(agent, after.turn, result, after.steps or ())
    sent = bool(decision.dispatch)
    if sent:
        send(deps, decision.dispatch, notice)
    if decision.waits and result is not None:
        park(deps, run, result, decision.waits)
    if decision.finish is not None and result is not None:
        finish_run(deps, run, agent, decision.finish, result)
    if decision.fail is not None:
        fail_run(deps, run, decision.fail)
    return sent


def park(deps: EngineDeps, run: RunRecord, result: TurnResult, waits: Sequence[str]) -> None:
    """Park the run on ``waits``; idempotent (the sweep and late tools park it again)."""
    store = deps.store
    # What the run waits for is recorded before the run says it waits: whoever sees it
    # ``awaiting_input`` can decide at once (found by the chaos run: a decision sent in between was
    # refused as "no pending approval").
    for step in waits:
        kind_of(step).park(deps, run, result, step)
    if store.transition_run_and_thread(run.id, ("running",), thread_status="awaiting_input",
                                       status="awaiting_input"):
        deps.events.publish(run_info(run).thread_key,
                            {"type": "status", "status": "awaiting_input", "run_id": run.id})


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
    if not deps.store.transition_run_and_thread(
        run.id, OPEN, thread_status="completed", release=True, status="completed", stopped=stopped,
        result=run_result_json(last.turn.text, output, usage, current.turns),
    ):
        return
    run_ended(deps, run, "completed")


def fail_run(deps: EngineDeps, run: RunRecord, error: str) -> None:
    """Mark the run failed with ``error`` and free the thread."""
    current = deps.store.get_run(run.id)
    if current is not None and current.status in TERMINAL:
        return
    log.warning("lunora: run %s failed: %s", run.id, error)
    if not deps.store.transition_run_and_thread(run.id, OPEN, thread_status="failed", release=True,
                                                status="failed", error=error):
        return
    run_ended(deps, run, "failed")
