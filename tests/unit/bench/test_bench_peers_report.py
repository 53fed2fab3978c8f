"""bench/peers.py's pure parts: the ratios to the floor, the table layout and the split of a batch
over processes (the benchmark itself is not a test; these pin what its printed figures mean)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[3] / "bench"


def _load(name: str) -> ModuleType:
    # By path, not by putting bench/ on sys.path: its rag.py would shadow the rag package.
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


report = _load("_peers_report")
split = _load("_peer_procs").split
SystemResult, median, peers_table, ratio, scaling_table = (
    report.SystemResult, report.median, report.peers_table, report.ratio, report.scaling_table)


def test_ratio_is_value_over_floor_and_dash_when_missing() -> None:
    assert ratio(3.0, 2.0) == "1.50x"
    assert ratio(math.nan, 2.0) == "-"
    assert ratio(1.0, 0.0) == "-"
    assert math.isnan(median([]))


def test_the_table_gives_each_system_its_ratio_to_the_first_row() -> None:
    floor = SystemResult("floor", latency_ms=[2.0, 2.0, 9.0], throughput={30: [500.0], 300: [600.0]})
    engine = SystemResult("engine", latency_ms=[3.0, 2.6, 100.0], throughput={30: [250.0]})
    lines = peers_table([floor, engine], [30, 300]).splitlines()
    assert lines[0].split(" | ") == ["system", "ms/step (1 in flight)", "x floor", "steps/s (30 in flight)",
                                     "x floor", "steps/s (300 in flight)", "x floor"]
    cells = [cell.strip() for cell in lines[3].split("|")]
    assert cells == ["engine", "3.00", "1.50x", "250", "0.50x", "-", "-"]  # medians; no 300 sample
    assert len({len(line) for line in lines[:3]}) == 1  # header, rule and floor row align


def test_scaling_is_the_last_process_count_over_the_first() -> None:
    engine = SystemResult("engine", scaling={1: [100.0, 120.0, 110.0], 2: [165.0]})
    skipped = SystemResult("no scaling samples")
    text = scaling_table([engine, skipped], [1, 2], 30)
    assert text.splitlines()[0] == "steps/s with 30 in flight"
    assert [cell.strip() for cell in text.splitlines()[3].split("|")] == ["engine", "110", "165", "x1.50"]
    assert "no scaling samples" not in text


def test_a_batch_is_split_evenly_over_at_most_that_many_processes() -> None:
    assert split(30, 2) == [15, 15]
    assert split(301, 2) == [151, 150]
    assert split(1, 2) == [1]
    assert split(5, 1) == [5]
