"""What telemetry costs per step, in one process: off, console lines, OpenTelemetry spans.

    python bench/telemetry.py [--runs 200] [--turns 4]

Runs an agent on the in-memory store with the in-process dispatcher (no network: only the engine's
own CPU is measured), every turn but the last calling one no-op tool, three ways on the same script:

- ``off``: no ``telemetry=`` (the app registers no hook: the pipeline skips hooks entirely);
- ``console``: ``console_telemetry(sink=...)`` (lines built, handed to a no-op sink);
- ``otel``: ``otel_telemetry(provider)`` with the SDK's ``SimpleSpanProcessor`` and in-memory exporter.

Prints the median µs per step of each (over rounds that interleave the three, so machine noise hits
them alike) and the ratio to ``off``. Benchmarks measure, they do not test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from lunora_jobs import define_agent, tool  # noqa: E402
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn  # noqa: E402
from lunora_jobs.runtime import Lunora  # noqa: E402
from lunora_jobs.store.memory import InMemoryStore  # noqa: E402
from lunora_jobs.telemetry import console_telemetry, otel_telemetry  # noqa: E402


@tool
def noop(n: int) -> str:
    """Does nothing."""
    return "ok"


def build(mode: str, turns: int) -> tuple[Lunora, InMemorySpanExporter | None]:
    """An app whose agent traces with ``mode``."""
    exporter = None
    telemetry: Any = None
    if mode == "console":
        telemetry = console_telemetry(sink=lambda line: None)
    elif mode == "otel":
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        telemetry = otel_telemetry(provider)
    script = [tool_call_turn(f"c{i}", "noop", {"n": i}) for i in range(turns - 1)] + [final_turn("done")]
    agent = define_agent(name="bench", model=ScriptedModel(script), tools=[noop], telemetry=telemetry)
    return Lunora([agent], store=InMemoryStore()), exporter


def one_run(app: Lunora, exporter: InMemorySpanExporter | None) -> float:
    """Seconds for one run."""
    began = time.perf_counter()
    app.agents.bench.run(input="go")
    elapsed = time.perf_counter() - began
    if exporter is not None:
        exporter.clear()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--turns", type=int, default=4)
    args = parser.parse_args()
    steps = 2 * args.turns - 1
    modes = ("off", "console", "otel")
    apps = {mode: build(mode, args.turns) for mode in modes}
    for mode in modes:  # warm up: imports, first-call caches
        for _ in range(5):
            one_run(*apps[mode])
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.runs):
        for mode in modes:
            samples[mode].append(one_run(*apps[mode]) / steps * 1e6)
    base = statistics.median(samples["off"])
    print(f"telemetry cost per step: {args.runs} runs x {steps} steps each, in-memory store, in-process")
    for mode in modes:
        median = statistics.median(samples[mode])
        print(f"  {mode:8s} {median:8.1f} µs/step (median)   {median / base:5.2f}x off")


if __name__ == "__main__":
    main()
