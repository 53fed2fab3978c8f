"""Prometheus metrics of the durable loop, as step hooks: runs, steps, attempts, tokens, sweeps.

``MetricsHooks`` counts what every worker process does; the worker serves the sum of its pool
processes over HTTP (Prometheus multiprocess mode, ``workers/metrics.py``). The metrics:

- ``lunora_runs_started_total{agent}`` (a run's first turn claimed for the first time) and
  ``lunora_runs_finished_total{agent,status}``;
- ``lunora_steps_total{kind,status}`` and ``lunora_step_duration_seconds{kind}`` (a histogram);
- ``lunora_step_attempts_total{kind}`` (every claimed attempt) and ``lunora_step_retries_total{kind}``
  (attempts after the first: redeliveries, takeovers, retries);
- ``lunora_tokens_total{agent,model,direction}`` (``input`` / ``output``, from each turn);
- ``lunora_sweep_recoveries_total{action}`` (``redispatched`` / ``finished`` / ``failed`` by the sweep);
- ``lunora_queue_depth{queue}`` (messages waiting, read from the Redis broker at scrape time) and
  ``lunora_approvals_waiting`` (tool calls waiting for a decision, read from the store at scrape).

``prometheus_client`` comes with the ``metrics`` extra (``pip install 'lunora-jobs[metrics]'``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from lunora_jobs.engine.hooks import StepHooks, StepInfo, StepOutput
from lunora_jobs.store.records import RunRecord

DURATION_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
)

RUNS_STARTED = Counter("lunora_runs_started", "Runs whose first turn was claimed.", ["agent"])
RUNS_FINISHED = Counter("lunora_runs_finished", "Runs that ended, by outcome.", ["agent", "status"])
STEPS = Counter("lunora_steps", "Steps that did work, by kind and outcome.", ["kind", "status"])
STEP_DURATION = Histogram("lunora_step_duration_seconds", "Wall time of a step's trip, by kind.", ["kind"],
                          buckets=DURATION_BUCKETS)
ATTEMPTS = Counter("lunora_step_attempts", "Claimed step attempts, by kind.", ["kind"])
RETRIES = Counter("lunora_step_retries", "Step attempts after the first, by kind.", ["kind"])
TOKENS = Counter("lunora_tokens", "Model tokens, by agent, model and direction.",
                 ["agent", "model", "direction"])
SWEEP_RECOVERIES = Counter("lunora_sweep_recoveries", "Stalled runs the sweep acted on.", ["action"])


class MetricsHooks(StepHooks):
    """Counts steps and runs into the process's Prometheus metrics."""

    def __init__(self) -> None:
        self._local = threading.local()

    def step_started(self, step: StepInfo) -> None:
        """Count the attempt; remember when it started."""
        ATTEMPTS.labels(step.kind).inc()
        if step.attempt > 1:
            RETRIES.labels(step.kind).inc()
        elif step.step == "llm:turn:0":
            RUNS_STARTED.labels(step.agent).inc()
        self._starts()[(step.run_id, step.step)] = time.perf_counter()

    def step_output(self, step: StepInfo, output: StepOutput) -> None:
        """Count a turn's tokens."""
        if step.kind != "turn" or not isinstance(output.result, dict):
            return
        turn = output.result.get("turn")
        if not isinstance(turn, dict):
            return
        usage = turn.get("usage") or {}
        model = str(turn.get("model") or "unknown")
        TOKENS.labels(step.agent, model, "input").inc(int(usage.get("input_tokens") or 0))
        TOKENS.labels(step.agent, model, "output").inc(int(usage.get("output_tokens") or 0))

    def step_finished(self, step: StepInfo, status: str) -> None:
        """Count the outcome and observe the duration."""
        began = self._starts().pop((step.run_id, step.step), None)
        STEPS.labels(step.kind, status).inc()
        if began is not None:
            STEP_DURATION.labels(step.kind).observe(time.perf_counter() - began)

    def run_finished(self, run: RunRecord, status: str) -> None:
        """Count the run's end."""
        RUNS_FINISHED.labels(run.agent, status).inc()

    def sweep_finished(self, redispatched: int, finished: int, failed: int) -> None:
        """Count what a sweep pass recovered."""
        for action, count in (("redispatched", redispatched), ("finished", finished), ("failed", failed)):
            if count:
                SWEEP_RECOVERIES.labels(action).inc(count)

    def _starts(self) -> dict[tuple[str, str], float]:
        starts: dict[tuple[str, str], float] | None = getattr(self._local, "starts", None)
        if starts is None:
            starts = self._local.starts = {}
        return starts


class ScrapeTimeGauges(Collector):
    """Gauges read when Prometheus scrapes (from the process serving ``/metrics``, not per task):
    queue depth per queue, and runs waiting for an approval. A source that fails is left out of that
    scrape."""

    def __init__(
        self, queue_depths: Callable[[], Iterable[tuple[str, int]]] | None = None,
        approvals_waiting: Callable[[], int] | None = None,
    ) -> None:
        self._queue_depths = queue_depths
        self._approvals_waiting = approvals_waiting

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """The gauges, read now."""
        if self._queue_depths is not None:
            family = GaugeMetricFamily("lunora_queue_depth", "Messages waiting in the broker queue.",
                                       labels=["queue"])
            try:
                for queue, depth in self._queue_depths():
                    family.add_metric([queue], depth)
                yield family
            except Exception:  # a broker that is down: no sample rather than a failed scrape
                pass
        if self._approvals_waiting is not None:
            try:
                waiting = self._approvals_waiting()
            except Exception:
                return
            yield GaugeMetricFamily("lunora_runs_awaiting_approval", "Runs parked on a human decision.",
                                    value=waiting)


def redis_queue_depths(client: Any, queues: Sequence[str]) -> Callable[[], list[tuple[str, int]]]:
    """A ``queue_depths`` source for a Redis broker: ``LLEN`` of each queue (with its priority lists)."""
    def read() -> list[tuple[str, int]]:
        out = []
        for queue in queues:
            # kombu keeps priorities 3/6/9 in lists named "<queue>\x06\x16<priority>".
            keys = [queue, *(f"{queue}\x06\x16{p}" for p in (3, 6, 9))]
            out.append((queue, sum(int(client.llen(k)) for k in keys)))
        return out
    return read
