"""The telemetry integration seam: what an agent's ``telemetry=`` option receives, and when.

An integration subclasses ``Telemetry`` and overrides what it needs. The engine calls, for each run
of an agent declared with ``telemetry=``:

- ``run_started(run)`` in the process that starts the run, before its first step is dispatched; the
  ``dict`` it returns (a trace-context carrier such as W3C ``traceparent``) is stored with the run, and
  every step of the run, on whichever worker and after whatever redelivery or sweep, is handed it
  back as ``step.trace``: that is how one run becomes one trace across processes;
- ``step_started(step)`` / ``step_finished(step, report)`` around every step that does work, paired on
  one thread (a span opened in the first is closed in the second);
- ``run_finished(run)`` once, in the process that recorded the end.

Privacy: ``record_inputs`` / ``record_outputs`` default to False, and then the engine does not even
hand an integration the prompt, the tool arguments, the model's text or a tool's result: only
structural metadata (model, finish reason, token counts, tool name and call id, timing, status).

Integrations observe: an exception raised in one is logged and the run goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger(__name__)


class TelemetryStep(Protocol):
    """The step an integration is told about (``lunora_jobs.engine.StepInfo``)."""

    @property
    def run_id(self) -> str: ...
    @property
    def step(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def agent(self) -> str: ...
    @property
    def thread_id(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def trace(self) -> Mapping[str, str] | None: ...


@dataclass(frozen=True, slots=True)
class RunStart:
    """A run being started. ``input`` only when the integration records inputs."""

    run_id: str
    agent: str
    thread_key: str
    owner: str | None
    input: Any = None


@dataclass(frozen=True, slots=True)
class StepReport:
    """What one step did, told to ``step_finished``.

    ``status``: ``completed``, ``retry`` (the attempt failed; it runs again), ``failed`` (no attempt
    left: the run fails), ``lost`` (the lease was taken over; the result was dropped) or ``error``
    (the pipeline raised). ``model``, ``finish_reasons`` and the token counts describe a model call;
    ``tool_name`` and ``tool_call_id`` a tool call. ``inputs`` / ``outputs`` are filled only for an
    integration with ``record_inputs`` / ``record_outputs`` (JSON-ready values).
    """

    status: str
    error: str | None = None
    model: str | None = None
    finish_reasons: tuple[str, ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    inputs: Any = None
    outputs: Any = None


@dataclass(frozen=True, slots=True)
class RunEnd:
    """A run that ended: ``status`` is ``completed``, ``failed`` or ``cancelled``."""

    run_id: str
    agent: str
    thread_key: str
    status: str
    error: str | None
    turns: int
    input_tokens: int
    output_tokens: int
    started_at_ms: int
    ended_at_ms: int
    trace: Mapping[str, str] = field(default_factory=dict)
    outputs: Any = None
    """The run's result (text, structured output): only with ``record_outputs``."""


class Telemetry:
    """Base class of telemetry integrations; every method's default does nothing.

    Example::

        class Printer(Telemetry):
            def step_finished(self, step, report):
                print(step.step, report.status, report.output_tokens)

        define_agent(name="support", telemetry=Printer())
    """

    record_inputs: bool = False
    record_outputs: bool = False

    def run_started(self, run: RunStart) -> dict[str, str]:
        """A run starts; return a carrier to store with it (``{}``: nothing to propagate)."""
        return {}

    def step_started(self, step: TelemetryStep) -> None:
        """A step was claimed; its work runs next, on this thread."""

    def step_finished(self, step: TelemetryStep, report: StepReport) -> None:
        """The step is over."""

    def run_finished(self, run: RunEnd) -> None:
        """The run ended."""

    @property
    def integrations(self) -> tuple[Telemetry, ...]:
        """The integrations this one fans out to (itself, unless it combines others)."""
        return (self,)


def start_trace(telemetry: Telemetry, run: RunStart) -> dict[str, str] | None:
    """``telemetry.run_started(run)`` as the engine calls it: a failing integration is logged and
    the run starts without a carrier (telemetry never stops a run)."""
    try:
        carrier = telemetry.run_started(run)
    except Exception:
        log.exception("lunora: telemetry %r failed in run_started; the run goes on", telemetry)
        return None
    return dict(carrier) if carrier else None
