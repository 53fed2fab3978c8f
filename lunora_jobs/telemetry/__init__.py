"""Telemetry for agents: ``define_agent(..., telemetry=...)`` traces every run, turn and tool call.

- ``otel_telemetry()``: OpenTelemetry spans with the GenAI semantic conventions; one run is one
  trace across workers (``otel.py``); ``configure_tracing`` sets up an exporter from Settings;
- ``console_telemetry()``: structured lines, no dependency;
- ``combine_telemetry(a, b)``: both, ``a``'s wrapper outermost;
- ``sentry_telemetry(sentry=sentry_sdk)``: Sentry spans and errors, with the SDK (2 or 3) you pass in;
- ``braintrust_telemetry(logger=...)``: Braintrust ``llm`` / ``tool`` spans, with the logger you pass in;
- ``Telemetry``: the base class for your own integration (``base.py`` says what is called when).

Privacy-safe by default: nothing of a prompt, tool argument, model text or tool result is recorded
unless an integration is built with ``record_inputs=True`` / ``record_outputs=True``.
"""

from lunora_jobs.telemetry.base import RunEnd, RunStart, StepReport, Telemetry, TelemetryStep
from lunora_jobs.telemetry.braintrust import braintrust_telemetry
from lunora_jobs.telemetry.combine import combine_telemetry
from lunora_jobs.telemetry.console import console_telemetry
from lunora_jobs.telemetry.otel import otel_telemetry
from lunora_jobs.telemetry.sentry import StepFailedError, sentry_telemetry

__all__ = [
    "RunEnd",
    "RunStart",
    "StepFailedError",
    "StepReport",
    "Telemetry",
    "TelemetryStep",
    "braintrust_telemetry",
    "combine_telemetry",
    "console_telemetry",
    "otel_telemetry",
    "sentry_telemetry",
]
