"""How a step travels through the engine's modules: entries per module and returns to modules left.

    python bench/step_trip.py

Runs an agent on the in-memory store (a turn with two parallel tool calls, a second turn with one,
a final turn) and traces every step with ``sys.setprofile``. An *entry* is a call into an engine
module from another module; a *return* is an entry into a module the step had already entered
(dunder functions — dataclass ``__init__``/``__eq__`` — are not counted). Prints, per step kind,
the mean returns and the modules entered more than once.
Runs against whatever checkout it sits in, so two checkouts compare side by side.
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lunora_jobs import define_tool, final_turn, tool_call_turn, tool_calls_turn  # noqa: E402
from lunora_jobs.agent import define_agent  # noqa: E402
from lunora_jobs.runtime import Lunora  # noqa: E402
from lunora_jobs.testing import agent_harness  # noqa: E402

ENGINE = "lunora_jobs.engine."
VOCABULARY = {"steps", "context", "runinfo", "keys", "memo", "fused", "ledger", "reads"}
"""Leaf helpers every stage may call (names, dependency accessors, memo decoding, store probes);
left out of the printed path, counted in the returns."""


def _trip(app: Any, run_id: str, step: str) -> tuple[int, Counter[str], list[str]]:
    sequence: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code.co_name.startswith("__"):
            return
        module = str(frame.f_globals.get("__name__", ""))
        caller = str(frame.f_back.f_globals.get("__name__", "")) if frame.f_back else ""
        if module.startswith(ENGINE) and module != caller:
            sequence.append(module)

    sys.setprofile(profile)
    try:
        app.engine.execute(run_id, step)
    finally:
        sys.setprofile(None)
    returns = sum(1 for i, module in enumerate(sequence) if module in sequence[:i])
    names = [module[len(ENGINE):] for module in sequence]
    path = [n for n in names if n not in VOCABULARY]
    return returns, Counter(names), [n for i, n in enumerate(path) if i == 0 or path[i - 1] != n]


def main() -> None:
    echo = define_tool(name="echo", description="Echo.", input_schema={"type": "object"},
                       execute=lambda args, ctx: args)
    agent = define_agent(name="trip", instructions="i", tools=[echo], max_turns=6)
    harness = agent_harness(agent, script=[
        tool_calls_turn([("a", "echo", {"x": 1}), ("b", "echo", {"x": 2})]),
        tool_call_turn("c", "echo", {"x": 3}),
        final_turn("done"),
    ])
    app: Lunora = harness.app
    per_kind: dict[str, list[int]] = defaultdict(list)
    repeated: dict[str, Counter[str]] = defaultdict(Counter)
    paths: dict[str, list[str]] = {}
    def run_task(task: Any) -> None:
        returns, entries, path = _trip(app, task.run_id, task.step)
        kind = task.step.split(":", 1)[0]
        paths.setdefault(kind, path)
        per_kind[kind].append(returns)
        for module, count in entries.items():
            if count > 1:
                repeated[kind][module] = max(repeated[kind][module], count)

    app.dispatcher.bind(run_task)
    result = harness.run(input="go", thread_key="trip")
    assert result.status == "completed", result.status
    for kind, values in sorted(per_kind.items()):
        print(f"{kind:5s} steps={len(values)} returns to a module already left: "
              f"mean {statistics.mean(values):.1f}, max {max(values)}")
        print(f"      modules entered more than once: {dict(repeated[kind]) or 'none'}")
        print(f"      path (helpers left out): {' > '.join(paths[kind])}")


if __name__ == "__main__":
    main()
