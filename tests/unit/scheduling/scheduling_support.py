"""What the scheduling tests share: the agents, the start of the fake clock, the app factory type."""

from __future__ import annotations

from collections.abc import Callable

from lunora_jobs import Lunora, define_agent

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z

support = define_agent(name="support", instructions="Help.", model="offline")
ops = define_agent(name="ops", instructions="Operate.", model="offline", on_concurrent_run="reject")

MakeApp = Callable[..., Lunora]
