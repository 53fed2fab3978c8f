"""Hook points around every step and run, for observers that must not edit the pipeline.

Telemetry spans, metrics and live views subclass ``StepHooks``, override what they need and register
with ``app.hooks.add(MyHooks())`` (or ``EngineDeps.hooks``). The pipeline calls, in order:

- ``step_started(step)``: the step was claimed and its work is about to run (not for replays,
  busy or refused deliveries — nothing runs for those);
- ``step_output(step, output)``: right before ``step_finished``, what the step produced (its
  recorded result, its error, what it worked on): for observers that describe a step (a model
  call's tokens, a tool's name) rather than only time it;
- ``step_finished(step, status)``: after the step, whatever happened (``completed``, ``retry``,
  ``failed``, ``lost``, or ``error`` when the work raised out of the pipeline); always paired with
  ``step_started`` on the same thread, so a span opened in one can be closed in the other;
- ``run_finished(run, status)``: the run reached ``completed``, ``failed`` or ``cancelled``
  (called once by the process that recorded the end);
- ``sweep_finished(redispatched, finished, failed)``: a sweep pass acted on stalled runs (steps
  re-dispatched, runs finished or failed by it); not called for a pass that found nothing.

Hooks observe; they never change the outcome. A hook that raises is logged and the run goes on.

Example::

    class Timing(StepHooks):
        def step_started(self, step: StepInfo) -> None:
            self.t0 = time.perf_counter()
        def step_finished(self, step: StepInfo, status: str) -> None:
            print(step.step, status, time.perf_counter() - self.t0)

    app.hooks.add(Timing())
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lunora_jobs.store.records import JSON, MessageRecord, RunRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StepInfo:
    """The step a hook is told about."""

    run_id: str
    step: str
    kind: str
    """The registered step kind (``turn``, ``tool``, ``approval``, ``memory``, ...)."""
    agent: str
    thread_id: str
    attempt: int
    generation: int
    """The claim's fencing generation: a retry or a takeover of the same step has a higher one."""
    trace: Mapping[str, str] | None = None
    """The trace-context carrier stored with the run at its start (``telemetry=``), else None."""
    thread_key: str = ""
    """The run's thread key (what live notices are addressed by)."""


@dataclass(frozen=True, slots=True)
class StepOutput:
    """What a step that did work produced (``StepHooks.step_output``)."""

    result: JSON
    """The recorded result when the step completed (a turn's memo, a tool's output), else None."""
    error: str | None
    """``Type: message`` when the work raised."""
    subject: Any
    """What the kind worked on, found before the claim (a tool step's located call), or None."""
    history: Sequence[MessageRecord] | None
    """A turn's prompt history when it was read with the claim, else None."""


class StepHooks:
    """Override any of these; the defaults do nothing."""

    def step_started(self, step: StepInfo) -> None:
        """The step was claimed; its work runs next."""

    def step_output(self, step: StepInfo, output: StepOutput) -> None:
        """What the step produced; called right before ``step_finished`` (not when it raised)."""

    def step_finished(self, step: StepInfo, status: str) -> None:
        """The step is over (see the module docstring for ``status``)."""

    def run_finished(self, run: RunRecord, status: str) -> None:
        """The run ended: ``completed``, ``failed`` or ``cancelled``."""

    def sweep_finished(self, redispatched: int, finished: int, failed: int) -> None:
        """A sweep pass recovered stalled runs."""


class HookSet:
    """The registered hooks, called in registration order; a failing hook never fails a step."""

    def __init__(self, hooks: tuple[StepHooks, ...] = ()) -> None:
        self._hooks: tuple[StepHooks, ...] = tuple(hooks)

    def add(self, hook: StepHooks) -> None:
        """Register ``hook`` for every later step and run."""
        self._hooks = (*self._hooks, hook)

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def step_started(self, step: StepInfo) -> None:
        """Tell every hook the step started."""
        self._each("step_started", step)

    def step_output(self, step: StepInfo, output: StepOutput) -> None:
        """Tell every hook what the step produced."""
        self._each("step_output", step, output)

    def step_finished(self, step: StepInfo, status: str) -> None:
        """Tell every hook the step finished."""
        self._each("step_finished", step, status)

    def run_finished(self, run: RunRecord, status: str) -> None:
        """Tell every hook the run ended."""
        self._each("run_finished", run, status)

    def sweep_finished(self, redispatched: int, finished: int, failed: int) -> None:
        """Tell every hook what a sweep pass recovered."""
        self._each("sweep_finished", redispatched, finished, failed)

    def _each(self, method: str, *args: object) -> None:
        for hook in self._hooks:
            try:
                getattr(hook, method)(*args)
            except Exception:
                log.exception("lunora: hook %r failed in %s; the run goes on", hook, method)
