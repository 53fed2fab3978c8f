"""``otel_telemetry``: OpenTelemetry spans for runs, model calls and tool calls (GenAI conventions).

One run is one trace, whichever workers run its steps:

- ``invoke_agent <agent>``: opened where the run starts, as a child of whatever span is current
  there (an API request's, say), and ended at once — OpenTelemetry ends a span in the process that
  began it, and a run crosses processes. Its context is stored with the run (a W3C ``traceparent``
  carrier), so every step, on any worker, after a redelivery, a sweep recovery or an approval days
  later, is its child;
- ``chat <model>`` per turn: ``gen_ai.operation.name=chat``, ``gen_ai.request.model`` /
  ``gen_ai.response.model``, ``gen_ai.usage.input_tokens`` / ``output_tokens``,
  ``gen_ai.response.finish_reasons``;
- ``execute_tool <tool>`` per tool call: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``;
- ``lunora.step <step>`` for the other step kinds (approvals, memory);
- ``lunora.run <agent>`` when the run ends: its whole duration (started at the run's creation),
  outcome, turns and total tokens.

Each step span is the current span while the step works, so spans made inside it (``rag``'s
``embeddings`` spans, an HTTP client's) join the run's trace. Attributes ``lunora.run_id``,
``lunora.step``, ``lunora.step.attempt`` tie a span to the ledger. Prompts, tool arguments, model
text and tool results are recorded only with ``record_inputs`` / ``record_outputs``
(``gen_ai.input.messages``, ``gen_ai.tool.call.arguments``, ``gen_ai.output.messages``,
``gen_ai.tool.call.result``, as JSON).
"""

from __future__ import annotations

import json
import random
import threading
from contextvars import Token
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from lunora_jobs.telemetry.base import RunEnd, RunStart, StepReport, Telemetry, TelemetryStep

TRACER_NAME = "lunora_jobs"
FAILED = frozenset({"retry", "failed", "lost", "error"})


class OtelTelemetry(Telemetry):
    """Spans through an OpenTelemetry ``TracerProvider`` (the global one unless given)."""

    def __init__(
        self, tracer_provider: trace.TracerProvider | None = None, *,
        record_inputs: bool = False, record_outputs: bool = False,
    ) -> None:
        # Without a provider: the global one's proxy, which follows a provider the worker sets later.
        self.tracer: trace.Tracer = trace.get_tracer(TRACER_NAME, tracer_provider=tracer_provider)
        self.record_inputs = record_inputs
        self.record_outputs = record_outputs
        self._local = threading.local()

    def run_started(self, run: RunStart) -> dict[str, str]:
        """Open and close ``invoke_agent``; return its context as a W3C carrier."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": run.agent,
            "gen_ai.conversation.id": run.thread_key, "lunora.run_id": run.run_id,
        }
        if run.input is not None:
            attributes["gen_ai.input.messages"] = _json([{"role": "user", "content": run.input}])
        span = self.tracer.start_span(f"invoke_agent {run.agent}", kind=SpanKind.PRODUCER,
                                      attributes=attributes)
        parent: trace.Span = span
        if not span.get_span_context().is_valid:
            # This process exports nothing (no provider): still give the run one trace id, so the
            # workers' step spans share a trace under a parent that is never exported.
            parent = trace.NonRecordingSpan(trace.SpanContext(
                random.getrandbits(128) or 1, random.getrandbits(64) or 1, is_remote=False,
                trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
            ))
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(parent))
        span.end()
        return carrier

    def step_started(self, step: TelemetryStep) -> None:
        """Open the step's span as a child of the run's, and make it current while the step works."""
        parent = propagate.extract(dict(step.trace or {}))
        name, attributes = _describe(step)
        span = self.tracer.start_span(name, context=parent, kind=_kind(step), attributes=attributes)
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        self._open()[(step.run_id, step.step)] = (span, token)

    def step_finished(self, step: TelemetryStep, report: StepReport) -> None:
        """Describe the step on its span, restore the previous context, end the span."""
        opened = self._open().pop((step.run_id, step.step), None)
        if opened is None:
            return
        span, token = opened
        try:
            _annotate(span, step, report)
        finally:
            otel_context.detach(token)
            span.end()

    def run_finished(self, run: RunEnd) -> None:
        """``lunora.run <agent>`` over the run's whole duration, with its outcome and totals."""
        parent = propagate.extract(dict(run.trace))
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": run.agent,
            "gen_ai.conversation.id": run.thread_key, "lunora.run_id": run.run_id,
            "lunora.run.status": run.status, "lunora.run.turns": run.turns,
            "gen_ai.usage.input_tokens": run.input_tokens, "gen_ai.usage.output_tokens": run.output_tokens,
        }
        if run.outputs is not None:
            attributes["gen_ai.output.messages"] = _json(run.outputs)
        span = self.tracer.start_span(f"lunora.run {run.agent}", context=parent, attributes=attributes,
                                      start_time=run.started_at_ms * 1_000_000)
        if run.status == "failed":
            span.set_status(Status(StatusCode.ERROR, run.error or "failed"))
        span.end(end_time=max(run.ended_at_ms, run.started_at_ms) * 1_000_000)

    def _open(self) -> dict[tuple[str, str], tuple[Span, Token[Context]]]:
        opened: dict[tuple[str, str], tuple[Span, Token[Context]]] | None = getattr(self._local, "open", None)
        if opened is None:
            opened = self._local.open = {}
        return opened


def otel_telemetry(
    tracer_provider: trace.TracerProvider | None = None, *,
    record_inputs: bool = False, record_outputs: bool = False,
) -> OtelTelemetry:
    """OpenTelemetry spans for an agent's runs: ``define_agent(..., telemetry=otel_telemetry())``.

    ``tracer_provider``: where spans go (default: the global provider, which a worker configures from
    ``LUNORA_OTEL_EXPORTER``; see ``lunora_jobs.telemetry.export``). Privacy-safe by default:
    ``record_inputs`` / ``record_outputs`` opt in to prompts, arguments, text and results.
    """
    return OtelTelemetry(tracer_provider, record_inputs=record_inputs, record_outputs=record_outputs)


def _kind(step: TelemetryStep) -> SpanKind:
    return SpanKind.CLIENT if step.kind == "turn" else SpanKind.INTERNAL


def _describe(step: TelemetryStep) -> tuple[str, dict[str, Any]]:
    attributes: dict[str, Any] = {
        "lunora.run_id": step.run_id, "lunora.step": step.step, "lunora.step.kind": step.kind,
        "lunora.step.attempt": step.attempt, "gen_ai.agent.name": step.agent,
    }
    if step.kind == "turn":
        attributes["gen_ai.operation.name"] = "chat"
        return "chat", attributes
    if step.kind == "tool":
        tool_name, _, call_id = step.step.partition(":")[2].partition(":")
        attributes.update({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool_name,
                           "gen_ai.tool.call.id": call_id, "gen_ai.tool.type": "function"})
        return f"execute_tool {tool_name}", attributes
    return f"lunora.step {step.step}", attributes


def _annotate(span: Span, step: TelemetryStep, report: StepReport) -> None:
    span.set_attribute("lunora.step.status", report.status)
    if report.model is not None:
        span.update_name(f"chat {report.model}")
        span.set_attribute("gen_ai.request.model", report.model)
        span.set_attribute("gen_ai.response.model", report.model)
    if report.finish_reasons:
        span.set_attribute("gen_ai.response.finish_reasons", list(report.finish_reasons))
    if report.input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", report.input_tokens)
    if report.output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", report.output_tokens)
    if report.inputs is not None:
        key = "gen_ai.tool.call.arguments" if step.kind == "tool" else "gen_ai.input.messages"
        span.set_attribute(key, _json(report.inputs))
    if report.outputs is not None:
        key = "gen_ai.tool.call.result" if step.kind == "tool" else "gen_ai.output.messages"
        span.set_attribute(key, _json(report.outputs))
    if report.status in FAILED:
        span.set_attribute("error.type", (report.error or report.status).partition(":")[0])
        span.set_status(Status(StatusCode.ERROR, report.error or report.status))


def _json(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)
