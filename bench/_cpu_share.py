"""Where the machine's CPU went during a measurement, read from ``/proc`` (Linux): busy cores, and the
share of the system under test, PostgreSQL, Redis, the benchmark's driver and everything else.

``bench/peers.py`` prints it beside the 1 -> 2 process scaling, to say what limits the scaling on a
small machine that PostgreSQL and Redis share with the workers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
CORES = os.cpu_count() or 1
GROUPS = ("system", "PostgreSQL", "Redis", "driver", "other")


def _machine_busy_s() -> float:
    # /proc/stat's first line: user nice system idle iowait irq softirq steal ... (ticks, all cores)
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) * TICK_S


def _processes() -> dict[int, tuple[str, int, float]]:
    """pid -> (command name, process group, CPU seconds so far)."""
    found: dict[int, tuple[str, int, float]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        rest = text[text.rindex(")") + 2:].split()
        found[int(stat.parent.name)] = (comm, int(rest[2]), (int(rest[11]) + int(rest[12])) * TICK_S)
    return found


@dataclass
class CpuShare:
    """CPU seconds per group over the measured windows, and their total wall time."""

    wall_s: float = 0.0
    busy_s: float = 0.0
    groups: dict[str, float] = field(default_factory=lambda: dict.fromkeys(GROUPS, 0.0))

    def measure(
        self, fn: Callable[[], float], system_pids: Iterable[int] = (), system_group: int = -1
    ) -> float:
        """Run ``fn`` (which returns its wall seconds), adding the CPU each group used meanwhile."""
        system = set(system_pids)
        before, busy = _processes(), _machine_busy_s()
        wall = fn()
        after, busy_after = _processes(), _machine_busy_s()
        self.wall_s += wall
        self.busy_s += busy_after - busy
        for pid, (comm, group, cpu) in after.items():
            used = cpu - before.get(pid, (comm, group, 0.0))[2]
            if pid in system or group == system_group:
                self.groups["system"] += used
            elif comm == "postgres":
                self.groups["PostgreSQL"] += used
            elif comm.startswith("redis-server"):
                self.groups["Redis"] += used
            elif pid == os.getpid():
                self.groups["driver"] += used
            else:
                self.groups["other"] += used
        return wall

    def cores(self, group: str) -> float:
        """Average cores the group used over the measured windows."""
        return self.groups[group] / self.wall_s if self.wall_s else 0.0

    def summary(self) -> str:
        """One line: busy cores of all, each group's cores, and what that says limits throughput."""
        busy = self.busy_s / self.wall_s if self.wall_s else 0.0
        parts = ", ".join(f"{name} {self.cores(name):.2f}" for name in GROUPS)
        if busy < 0.85 * CORES:
            verdict = "not CPU-bound: waits (round trips, the broker, locks) limit it"
        else:
            verdict = "CPU-bound: the cores are full, so each hand-off between processes waits for one"
        return f"busy {busy:.2f} of {CORES} cores ({parts}) -> {verdict}"
