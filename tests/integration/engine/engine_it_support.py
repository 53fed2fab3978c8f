"""Helpers for the engine integration suites: agents, a recording dispatcher, a statement counter."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from lunora_jobs import ToolContext, define_agent, tool
from lunora_jobs.agent import AgentDefinition
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.testing import FakeClock as FakeClock


class RecordingDispatcher:
    """A broker stand-in that only records: the test decides when and where each task runs."""

    def __init__(self) -> None:
        self.tasks: list[StepTask] = []
        self._lock = threading.Lock()

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        with self._lock:
            self.tasks.extend(tasks)

    def revoke(self, run_id: str) -> None:
        """Nothing queued to drop."""

    def steps(self) -> list[str]:
        return [t.step for t in self.tasks]


TOOL_RUNS: list[str] = []
_tool_lock = threading.Lock()


@tool
def get_weather(city: str, ctx: ToolContext) -> Any:
    """Look up the current weather for a city."""
    with _tool_lock:
        TOOL_RUNS.append(ctx.idempotency_key)
    return ctx.run("weather:lookup", {"city": city})


def weather_agent(**options: Any) -> AgentDefinition:
    options.setdefault("tools", [get_weather])
    return define_agent(
        name="support", instructions="You are a helpful support agent.", model="offline", **options
    )


def weather_stub(args: dict[str, Any]) -> dict[str, Any]:
    return {"city": args["city"], "temp_c": 21}


@contextmanager
def count_statements(engine: sa.engine.Engine) -> Iterator[list[str]]:
    """Collect every SQL statement sent on ``engine`` inside the block."""
    seen: list[str] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement.split(None, 1)[0].upper())

    sa.event.listen(engine, "before_cursor_execute", before)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", before)
