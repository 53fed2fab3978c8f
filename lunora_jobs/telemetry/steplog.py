"""One structured log line per step (``LUNORA_STEP_LOG=true``): logger ``lunora.steps``, INFO.

Each line is ``step {json}`` with the run id, step name, kind, agent, attempt, status and duration
in milliseconds, so a log pipeline can follow a run across workers by its run id.
"""

from __future__ import annotations

import json
import logging
import threading
import time

from lunora_jobs.engine.hooks import StepHooks, StepInfo

log = logging.getLogger("lunora.steps")


class StepLogHooks(StepHooks):
    """Logs every step that did work when it ends."""

    def __init__(self) -> None:
        self._local = threading.local()

    def step_started(self, step: StepInfo) -> None:
        """Remember when the step started."""
        starts: dict[tuple[str, str], float] | None = getattr(self._local, "starts", None)
        if starts is None:
            starts = self._local.starts = {}
        starts[(step.run_id, step.step)] = time.perf_counter()

    def step_finished(self, step: StepInfo, status: str) -> None:
        """Write the line."""
        starts: dict[tuple[str, str], float] = getattr(self._local, "starts", {})
        began = starts.pop((step.run_id, step.step), None)
        line = {
            "run_id": step.run_id, "step": step.step, "kind": step.kind, "agent": step.agent,
            "attempt": step.attempt, "status": status,
            "duration_ms": None if began is None else round((time.perf_counter() - began) * 1000, 3),
        }
        log.info("step %s", json.dumps(line, sort_keys=True))
