"""The engine's step hooks, translated for the agents' ``telemetry=`` integrations.

Registered by the app only when some agent declares ``telemetry=`` (an app without one pays
nothing per step: the pipeline skips its hooks when none is registered). Each step is reported to
its agent's integration with structural metadata read from the step's recorded result (model,
finish reason, tokens, tool name and call id); prompts, tool arguments, model text and results are
added only for an integration that records inputs / outputs.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Mapping
from typing import Any

from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.hooks import StepHooks, StepInfo, StepOutput
from lunora_jobs.engine.memo import LocatedCall
from lunora_jobs.engine.runinfo import run_info
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import MessageRecord, RunRecord
from lunora_jobs.telemetry.base import RunEnd, StepReport, Telemetry


class TelemetryHooks(StepHooks):
    """Routes every step and run end to its agent's telemetry integration."""

    def __init__(self, agents: Mapping[str, AgentDefinition], store: AgentStore) -> None:
        self._agents = agents
        self._store = store
        self._local = threading.local()

    def _telemetry(self, agent: str) -> Telemetry | None:
        definition = self._agents.get(agent)
        return None if definition is None else definition.telemetry

    def step_started(self, step: StepInfo) -> None:
        """Tell the agent's integration."""
        telemetry = self._telemetry(step.agent)
        if telemetry is None:
            return
        if telemetry.record_inputs and step.kind == "turn":  # the prompt, as the turn reads it
            self._prompts()[(step.run_id, step.step)] = self._store.load_thread_for_turn(step.thread_id)
        telemetry.step_started(step)

    def step_output(self, step: StepInfo, output: StepOutput) -> None:
        """Keep what the step produced for ``step_finished`` (same thread, next call)."""
        if self._telemetry(step.agent) is not None:
            self._outputs()[(step.run_id, step.step)] = output

    def step_finished(self, step: StepInfo, status: str) -> None:
        """Report the step to the agent's integration."""
        key = (step.run_id, step.step)
        output = self._outputs().pop(key, None)
        prompt = self._prompts().pop(key, None)
        if output is not None and output.history is None and prompt is not None:
            output = dataclasses.replace(output, history=prompt)
        telemetry = self._telemetry(step.agent)
        if telemetry is not None:
            telemetry.step_finished(step, step_report(step, status, output, telemetry))

    def run_finished(self, run: RunRecord, status: str) -> None:
        """Report the run's end to the agent's integration."""
        telemetry = self._telemetry(run.agent)
        if telemetry is None:
            return
        if run.status != status:  # the record predates the step that ended the run: read the totals
            run = self._store.get_run(run.id) or run
        info = run_info(run)
        telemetry.run_finished(RunEnd(
            run.id, run.agent, info.thread_key, status, run.error, run.turns, run.input_tokens,
            run.output_tokens, run.created_at, max(run.updated_at, int(time.time() * 1000)),
            info.trace or {}, run.result if telemetry.record_outputs else None,
        ))

    def _prompts(self) -> dict[tuple[str, str], list[MessageRecord]]:
        prompts: dict[tuple[str, str], list[MessageRecord]] | None = getattr(self._local, "prompts", None)
        if prompts is None:
            prompts = self._local.prompts = {}
        return prompts

    def _outputs(self) -> dict[tuple[str, str], StepOutput]:
        outputs: dict[tuple[str, str], StepOutput] | None = getattr(self._local, "outputs", None)
        if outputs is None:
            outputs = self._local.outputs = {}
        return outputs


def step_report(step: StepInfo, status: str, output: StepOutput | None, telemetry: Telemetry) -> StepReport:
    """What the integration is told about ``step``: metadata always, content only on opt-in."""
    if output is None:
        return StepReport(status)
    result = output.result if isinstance(output.result, dict) else {}
    if step.kind == "turn":
        return _turn_report(status, output, result, telemetry)
    if step.kind == "tool":
        tool_name, _, call_id = step.step.partition(":")[2].partition(":")
        subject = getattr(output.subject, "located", None)
        inputs = None
        if telemetry.record_inputs and isinstance(subject, LocatedCall):
            inputs = subject.call.arguments
        outputs = result.get("output") if telemetry.record_outputs and result else None
        return StepReport(status, output.error, tool_name=tool_name, tool_call_id=call_id,
                          inputs=inputs, outputs=outputs)
    return StepReport(status, output.error,
                      outputs=output.result if telemetry.record_outputs else None)


def _turn_report(
    status: str, output: StepOutput, result: dict[str, Any], telemetry: Telemetry,
) -> StepReport:
    turn = result.get("turn") if isinstance(result.get("turn"), dict) else None
    inputs = None
    if telemetry.record_inputs and output.history is not None:
        inputs = [{"role": m.role, "content": m.content} for m in output.history]
    if turn is None:
        return StepReport(status, output.error, inputs=inputs)
    usage = turn.get("usage") or {}
    outputs = None
    if telemetry.record_outputs:
        outputs = [{"role": "assistant", "content": turn.get("text"),
                    "tool_calls": turn.get("tool_calls") or []}]
    return StepReport(
        status, output.error, model=turn.get("model"),
        finish_reasons=(str(turn.get("finish_reason") or "stop"),),
        input_tokens=int(usage.get("input_tokens") or 0), output_tokens=int(usage.get("output_tokens") or 0),
        inputs=inputs, outputs=outputs,
    )
