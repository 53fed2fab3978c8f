"""``combine_telemetry``: fan the lifecycle out to several integrations, nested like wrappers.

Starts go left to right and ends right to left, so the first integration is the outermost wrapper
(its span opens first and closes last), as with nested ``with`` blocks. Each integration sees
inputs and outputs only if it records them itself; a failing integration is logged and skipped.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from lunora_jobs.errors import InvalidAgentOptionError
from lunora_jobs.telemetry.base import RunEnd, RunStart, StepReport, Telemetry, TelemetryStep

log = logging.getLogger(__name__)


class CombinedTelemetry(Telemetry):
    """Several integrations behaving as one (build it with ``combine_telemetry``)."""

    def __init__(self, integrations: Sequence[Telemetry]) -> None:
        flat: list[Telemetry] = []
        for integration in integrations:
            flat.extend(integration.integrations)
        self._integrations = tuple(flat)
        self.record_inputs = any(i.record_inputs for i in flat)
        self.record_outputs = any(i.record_outputs for i in flat)

    @property
    def integrations(self) -> tuple[Telemetry, ...]:
        """The integrations, outermost first."""
        return self._integrations

    def run_started(self, run: RunStart) -> dict[str, str]:
        """Every integration's carrier, merged (the first integration's keys win)."""
        carrier: dict[str, str] = {}
        for integration in self._integrations:
            given = _guard(integration, "run_started", _start_for(integration, run))
            for key, value in (given or {}).items():
                carrier.setdefault(key, value)
        return carrier

    def step_started(self, step: TelemetryStep) -> None:
        """Outermost first."""
        for integration in self._integrations:
            _guard(integration, "step_started", step)

    def step_finished(self, step: TelemetryStep, report: StepReport) -> None:
        """Innermost first."""
        for integration in reversed(self._integrations):
            _guard(integration, "step_finished", step, _report_for(integration, report))

    def run_finished(self, run: RunEnd) -> None:
        """Innermost first."""
        for integration in reversed(self._integrations):
            given = run if integration.record_outputs else dataclasses.replace(run, outputs=None)
            _guard(integration, "run_finished", given)


def combine_telemetry(*integrations: Telemetry) -> Telemetry:
    """One integration from several: ``combine_telemetry(sentry_telemetry(sentry=sentry_sdk),
    console_telemetry())`` traces with both, Sentry's span wrapping the console's."""
    checked = [_check(i) for i in integrations]
    if not checked:
        raise InvalidAgentOptionError("combine_telemetry() needs at least one integration.")
    return checked[0] if len(checked) == 1 else CombinedTelemetry(checked)


def coerce_telemetry(value: Any) -> Telemetry | None:
    """What ``define_agent(telemetry=...)`` accepts: an integration, a list of them (combined), or
    None / False for none. Raises ``InvalidAgentOptionError`` for anything else."""
    if value is None or value is False:
        return None
    if isinstance(value, Telemetry):
        return value
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | dict):
        return combine_telemetry(*list(value))
    return _check(value)


def _check(value: Any) -> Telemetry:
    if not isinstance(value, Telemetry):
        raise InvalidAgentOptionError(
            f"telemetry={value!r} is not a telemetry integration; pass otel_telemetry(), "
            "console_telemetry(), sentry_telemetry(sentry=...), braintrust_telemetry(logger=...), "
            "a combine_telemetry(...) of them, or a Telemetry subclass."
        )
    return value


def _start_for(integration: Telemetry, run: RunStart) -> RunStart:
    return run if integration.record_inputs else dataclasses.replace(run, input=None)


def _report_for(integration: Telemetry, report: StepReport) -> StepReport:
    if not integration.record_inputs and report.inputs is not None:
        report = dataclasses.replace(report, inputs=None)
    if not integration.record_outputs and report.outputs is not None:
        report = dataclasses.replace(report, outputs=None)
    return report


def _guard(integration: Telemetry, method: str, *args: Any) -> Any:
    try:
        return getattr(integration, method)(*args)
    except Exception:
        log.exception("lunora: telemetry %r failed in %s; the run goes on", integration, method)
        return None
