"""``sentry_telemetry``: Sentry spans for model calls and tool calls, errors to Sentry.

Dependency-injected: pass your initialised ``sentry_sdk`` module (``sentry_telemetry(sentry=sentry_sdk)``);
Lunora never imports it; sentry-sdk 2 and 3 both work (``_sentry_spans.py``). Each step that works
becomes a span (a transaction on sentry-sdk 2; ``op`` ``gen_ai.generate`` for a
turn, ``gen_ai.execute_tool`` for a tool call, ``lunora.step`` otherwise) that continues the run's
trace: the run's ``sentry-trace`` / ``baggage`` headers are stored with the run at its start, so
every step, on any worker, lands in one Sentry trace. A failed attempt is sent to
``capture_exception`` as a ``StepFailedError`` naming the run, the step and the error.
Privacy-safe by default, as every integration: content only with ``record_inputs`` / ``record_outputs``.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from lunora_jobs.errors import LunoraError
from lunora_jobs.telemetry._sentry_spans import StepSpan, sentry_spans
from lunora_jobs.telemetry.base import RunStart, StepReport, Telemetry, TelemetryStep

OPS = {"turn": "gen_ai.generate", "tool": "gen_ai.execute_tool"}
FAILED = frozenset({"retry", "failed", "lost", "error"})


class StepFailedError(LunoraError):
    """What Sentry receives for a failed step attempt: ``run <id> step <name>: <error>``."""


class SentryTelemetry(Telemetry):
    """Sentry spans per step, continuing the run's trace (see the module docstring)."""

    def __init__(self, sentry: Any, *, record_inputs: bool = False, record_outputs: bool = False) -> None:
        self._spans = sentry_spans(sentry)
        self.record_inputs = record_inputs
        self.record_outputs = record_outputs
        self._local = threading.local()

    def run_started(self, run: RunStart) -> dict[str, str]:
        """An ``invoke_agent`` root; its trace headers are the run's carrier."""
        attributes: dict[str, Any] = {"sentry.op": "gen_ai.invoke_agent", "gen_ai.agent.name": run.agent,
                                      "lunora.run_id": run.run_id}
        if run.input is not None:
            attributes["gen_ai.input.messages"] = _json([{"role": "user", "content": run.input}])
        return self._spans.run_root(f"invoke_agent {run.agent}", attributes)

    def step_started(self, step: TelemetryStep) -> None:
        """Start the step's span in the run's trace."""
        if step.kind == "tool":
            name = f"execute_tool {step.step.split(':', 2)[1]}"
        elif step.kind == "turn":
            name = "chat"
        else:
            name = f"lunora.step {step.step}"
        self._open()[(step.run_id, step.step)] = self._spans.step(
            dict(step.trace or {}), OPS.get(step.kind, "lunora.step"), name,
            {"lunora.run_id": step.run_id, "lunora.step": step.step, "lunora.step.attempt": step.attempt,
             "gen_ai.agent.name": step.agent},
        )

    def step_finished(self, step: TelemetryStep, report: StepReport) -> None:
        """Describe the step, report a failure, finish the span."""
        span = self._open().pop((step.run_id, step.step), None)
        if span is None:
            return
        error = None
        try:
            if report.model is not None:
                span.rename(f"chat {report.model}")
                span.set("gen_ai.request.model", report.model)
            for key, value in (
                ("gen_ai.usage.input_tokens", report.input_tokens),
                ("gen_ai.usage.output_tokens", report.output_tokens),
                ("gen_ai.response.finish_reasons", list(report.finish_reasons) or None),
                ("gen_ai.tool.name", report.tool_name), ("gen_ai.tool.call.id", report.tool_call_id),
                ("gen_ai.input.messages" if step.kind != "tool" else "gen_ai.tool.call.arguments",
                 None if report.inputs is None else _json(report.inputs)),
                ("gen_ai.output.messages" if step.kind != "tool" else "gen_ai.tool.call.result",
                 None if report.outputs is None else _json(report.outputs)),
            ):
                if value is not None:
                    span.set(key, value)
            span.set("lunora.step.status", report.status)
            if report.status in FAILED:
                error = StepFailedError(
                    f"run {step.run_id} step {step.step} ({report.status}): {report.error or report.status}"
                )
        finally:
            span.end(error)

    def _open(self) -> dict[tuple[str, str], StepSpan]:
        opened: dict[tuple[str, str], StepSpan] | None = getattr(self._local, "open", None)
        if opened is None:
            opened = self._local.open = {}
        return opened


def sentry_telemetry(
    sentry: Any, *, record_inputs: bool = False, record_outputs: bool = False,
) -> SentryTelemetry:
    """Sentry for an agent's steps: ``telemetry=sentry_telemetry(sentry=sentry_sdk)`` (initialise it with
    ``sentry_sdk.init(dsn=..., traces_sample_rate=...)`` as usual). See the module docstring."""
    return SentryTelemetry(sentry, record_inputs=record_inputs, record_outputs=record_outputs)


def _json(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)
