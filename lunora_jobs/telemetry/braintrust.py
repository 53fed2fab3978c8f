"""``braintrust_telemetry``: Braintrust spans for model calls (``type="llm"``) and tool calls (``"tool"``).

Dependency-injected: pass your own logger (``braintrust.init_logger(project=...)``); Lunora never
imports the SDK. The run's span (``invoke_agent <agent>``, ``type="task"``) is exported at the run's
start and stored with the run (``braintrust-parent``), so each step's span, on any worker, is its
child: one run is one Braintrust trace. Each step logs its metrics (``prompt_tokens``,
``completion_tokens``, ``tokens``) and metadata (run id, step, attempt, model, finish reasons, tool
name and call id, status); a failed attempt logs its ``error``. ``input`` / ``output`` only with
``record_inputs`` / ``record_outputs``.
"""

from __future__ import annotations

import threading
from typing import Any

from lunora_jobs.telemetry.base import RunStart, StepReport, Telemetry, TelemetryStep

PARENT = "braintrust-parent"
TYPES = {"turn": "llm", "tool": "tool"}
FAILED = frozenset({"retry", "failed", "lost", "error"})


class BraintrustTelemetry(Telemetry):
    """Braintrust spans per step under the run's span (see the module docstring)."""

    def __init__(self, logger: Any, *, record_inputs: bool = False, record_outputs: bool = False) -> None:
        self._logger = logger
        self.record_inputs = record_inputs
        self.record_outputs = record_outputs
        self._local = threading.local()

    def run_started(self, run: RunStart) -> dict[str, str]:
        """Log the run's span; its export is the run's carrier."""
        event: dict[str, Any] = {"metadata": {"lunora.run_id": run.run_id, "gen_ai.agent.name": run.agent,
                                              "thread_key": run.thread_key}}
        if run.input is not None:
            event["input"] = run.input
        span = self._logger.start_span(name=f"invoke_agent {run.agent}", type="task", **event)
        carrier = {PARENT: str(span.export())}
        span.end()
        return carrier

    def step_started(self, step: TelemetryStep) -> None:
        """Open the step's span under the run's."""
        if step.kind == "tool":
            name = f"execute_tool {step.step.split(':', 2)[1]}"
        else:
            name = "chat" if step.kind == "turn" else f"lunora.step {step.step}"
        parent = (step.trace or {}).get(PARENT)
        span = self._logger.start_span(name=name, type=TYPES.get(step.kind, "task"), parent=parent)
        self._open()[(step.run_id, step.step)] = span

    def step_finished(self, step: TelemetryStep, report: StepReport) -> None:
        """Log what the step did and end its span."""
        span = self._open().pop((step.run_id, step.step), None)
        if span is None:
            return
        try:
            metadata: dict[str, Any] = {"lunora.run_id": step.run_id, "lunora.step": step.step,
                                        "lunora.step.attempt": step.attempt, "status": report.status}
            for key, value in (("model", report.model),
                               ("finish_reasons", list(report.finish_reasons) or None),
                               ("tool_name", report.tool_name), ("tool_call_id", report.tool_call_id)):
                if value is not None:
                    metadata[key] = value
            event: dict[str, Any] = {"metadata": metadata}
            if report.input_tokens is not None or report.output_tokens is not None:
                prompt, completion = report.input_tokens or 0, report.output_tokens or 0
                event["metrics"] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                    "tokens": prompt + completion}
            if report.inputs is not None:
                event["input"] = report.inputs
            if report.outputs is not None:
                event["output"] = report.outputs
            if report.status in FAILED:
                event["error"] = report.error or report.status
            span.log(**event)
        finally:
            span.end()

    def _open(self) -> dict[tuple[str, str], Any]:
        opened: dict[tuple[str, str], Any] | None = getattr(self._local, "open", None)
        if opened is None:
            opened = self._local.open = {}
        return opened


def braintrust_telemetry(
    logger: Any, *, record_inputs: bool = False, record_outputs: bool = False,
) -> BraintrustTelemetry:
    """Braintrust for an agent's steps: ``telemetry=braintrust_telemetry(logger=braintrust.init_logger(
    project="support"))``. See the module docstring."""
    return BraintrustTelemetry(logger, record_inputs=record_inputs, record_outputs=record_outputs)
