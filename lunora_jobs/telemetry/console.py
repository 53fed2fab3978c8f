"""``console_telemetry``: one JSON line per run start, step and run end — no dependency at all.

Each step line carries the run id, step name, kind, attempt, status and duration, and for a model
call its model, finish reason and tokens, for a tool call its name and call id. Inputs and outputs
only with ``record_inputs`` / ``record_outputs``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, TextIO

from lunora_jobs.telemetry.base import RunEnd, RunStart, StepReport, Telemetry, TelemetryStep


class ConsoleTelemetry(Telemetry):
    """Writes structured lines to ``stream`` (stderr unless given) or hands them to ``sink``."""

    def __init__(
        self, stream: TextIO | None = None, *, sink: Callable[[dict[str, Any]], None] | None = None,
        record_inputs: bool = False, record_outputs: bool = False,
    ) -> None:
        self._stream = stream
        self._sink = sink
        self.record_inputs = record_inputs
        self.record_outputs = record_outputs
        self._local = threading.local()

    def run_started(self, run: RunStart) -> dict[str, str]:
        """A ``run.start`` line."""
        line: dict[str, Any] = {"event": "run.start", "run_id": run.run_id, "agent": run.agent,
                                "thread_key": run.thread_key}
        if run.input is not None:
            line["input"] = run.input
        self._emit(line)
        return {}

    def step_started(self, step: TelemetryStep) -> None:
        """Remember when the step started (the line is written when it ends)."""
        starts: dict[tuple[str, str], float] = self._starts()
        starts[(step.run_id, step.step)] = time.perf_counter()

    def step_finished(self, step: TelemetryStep, report: StepReport) -> None:
        """A ``step`` line with the step's metadata and duration."""
        began = self._starts().pop((step.run_id, step.step), None)
        line: dict[str, Any] = {
            "event": "step", "run_id": step.run_id, "step": step.step, "kind": step.kind,
            "agent": step.agent, "attempt": step.attempt,
        }
        line.update({k: v for k, v in asdict(report).items() if v not in (None, ())})
        if began is not None:
            line["duration_ms"] = round((time.perf_counter() - began) * 1000, 3)
        self._emit(line)

    def run_finished(self, run: RunEnd) -> None:
        """A ``run.end`` line: outcome, turns, tokens, duration."""
        line: dict[str, Any] = {
            "event": "run.end", "run_id": run.run_id, "agent": run.agent, "status": run.status,
            "turns": run.turns, "input_tokens": run.input_tokens, "output_tokens": run.output_tokens,
            "duration_ms": max(run.ended_at_ms - run.started_at_ms, 0),
        }
        if run.error:
            line["error"] = run.error
        if run.outputs is not None:
            line["outputs"] = run.outputs
        self._emit(line)

    def _starts(self) -> dict[tuple[str, str], float]:
        starts: dict[tuple[str, str], float] | None = getattr(self._local, "starts", None)
        if starts is None:
            starts = self._local.starts = {}
        return starts

    def _emit(self, line: dict[str, Any]) -> None:
        if self._sink is not None:
            self._sink(line)
            return
        stream = self._stream or sys.stderr
        stream.write("lunora.telemetry " + json.dumps(line, default=str, sort_keys=True) + "\n")
        stream.flush()


def console_telemetry(
    stream: TextIO | None = None, *, sink: Callable[[dict[str, Any]], None] | None = None,
    record_inputs: bool = False, record_outputs: bool = False,
) -> ConsoleTelemetry:
    """A zero-dependency structured tracer: ``define_agent(..., telemetry=console_telemetry())``.

    Lines go to ``stream`` (default stderr) prefixed ``lunora.telemetry``, or as dicts to ``sink``.
    """
    return ConsoleTelemetry(stream, sink=sink, record_inputs=record_inputs, record_outputs=record_outputs)
