"""The tables ``bench/peers.py`` prints: per-step latency and throughput of each system with its ratio
to the first row (the raw-Celery floor), and the 1 -> N process scaling. Pure formatting, no I/O."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class SystemResult:
    """One system's samples: ms per step of one workflow at a time, steps/s per number in flight
    (all processes), and steps/s at the scaling load per number of processes."""

    name: str
    latency_ms: list[float] = field(default_factory=list)
    throughput: dict[int, list[float]] = field(default_factory=dict)
    scaling: dict[int, list[float]] = field(default_factory=dict)
    cpu: dict[int, str] = field(default_factory=dict)
    """Processes -> where the CPU went during the scaling samples (``_cpu_share.CpuShare.summary``)."""


def median(values: Sequence[float]) -> float:
    """The median, or NaN for no samples (a system left out of a measurement)."""
    return statistics.median(values) if values else math.nan


def ratio(value: float, floor: float) -> str:
    """``value / floor`` as ``1.23x``; ``-`` when either is missing or the floor is zero."""
    if math.isnan(value) or math.isnan(floor) or floor == 0:
        return "-"
    return f"{value / floor:.2f}x"


def _number(value: float, digits: int) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def align(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: the first column left-aligned, the others right-aligned, ``|`` between."""
    table = [list(header), *[list(row) for row in rows]]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]

    def line(row: list[str]) -> str:
        rest = [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        cells = [row[0].ljust(widths[0]), *rest]
        return " | ".join(cells).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return "\n".join([line(table[0]), rule, *[line(row) for row in table[1:]]])


def peers_table(results: Sequence[SystemResult], in_flight: Sequence[int]) -> str:
    """Median ms/step (1 in flight) and steps/s per load, each with its ratio to ``results[0]``.

    Latency ratios above 1 are slower than the floor; throughput ratios below 1 are fewer steps/s.
    """
    floor = results[0]
    header = ["system", "ms/step (1 in flight)", "x floor"]
    for n in in_flight:
        header += [f"steps/s ({n} in flight)", "x floor"]
    rows = []
    for result in results:
        latency = median(result.latency_ms)
        row = [result.name, _number(latency, 2), ratio(latency, median(floor.latency_ms))]
        for n in in_flight:
            rate = median(result.throughput.get(n, []))
            row += [_number(rate, 0), ratio(rate, median(floor.throughput.get(n, [])))]
        rows.append(row)
    return align(header, rows)


def scaling_table(results: Sequence[SystemResult], processes: Sequence[int], load: int) -> str:
    """Median steps/s at ``load`` in flight per process count, and the gain of the last over the first."""
    header = ["system"] + [f"{p} process{'es' if p > 1 else ''}" for p in processes] + ["scaling"]
    rows = []
    for result in results:
        if not result.scaling:
            continue
        rates = [median(result.scaling.get(p, [])) for p in processes]
        gain = ratio(rates[-1], rates[0]).replace("x", "")
        rows.append([result.name, *[_number(r, 0) for r in rates], "-" if gain == "-" else "x" + gain])
    return f"steps/s with {load} in flight\n" + align(header, rows)


def samples_line(result: SystemResult) -> str:
    """Every sample, so a reader can see the spread behind each median."""
    parts = [f"ms/step {', '.join(f'{v:.2f}' for v in result.latency_ms)}"]
    parts += [f"steps/s@{n} {', '.join(f'{v:.0f}' for v in values)}"
              for n, values in sorted(result.throughput.items())]
    return f"  {result.name}: " + "; ".join(parts)
