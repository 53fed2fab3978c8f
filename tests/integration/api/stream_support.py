"""Reading the thread stream in tests: raw SSE over httpx and raw WebSocket frames."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
from websockets.sync.client import connect

from lunora_jobs.client.sse import SseParser

Event = tuple[str, Any, int | None]  # (event, data, id)


def read_sse(url: str, headers: dict[str, str], stop: Callable[[list[Event]], bool],
             timeout: float = 60.0) -> tuple[list[Event], list[str]]:
    """Read ``url`` until ``stop(events)``; returns the events and every raw line (for heartbeats)."""
    events: list[Event] = []
    lines: list[str] = []
    parser = SseParser()
    deadline = time.monotonic() + timeout
    with httpx.stream("GET", url, headers=headers, timeout=httpx.Timeout(10.0, read=30.0)) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            lines.append(line)
            found = parser.feed(line)
            if found is not None:
                events.append((found.event, json.loads(found.data), int(found.id) if found.id else None))
                if stop(events):
                    break
            assert time.monotonic() < deadline, f"stream did not reach the stop condition: {events}"
    return events, lines


def read_ws(url: str, headers: dict[str, str], stop: Callable[[list[Event]], bool],
            timeout: float = 60.0) -> list[Event]:
    """Read WebSocket frames from ``url`` until ``stop(events)``."""
    events: list[Event] = []
    deadline = time.monotonic() + timeout
    with connect(url, additional_headers=headers, open_timeout=10) as socket:
        while not stop(events):
            frame = json.loads(socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            events.append((frame["event"], frame["data"], frame["id"]))
    return events


def messages_of(events: list[Event]) -> list[dict[str, Any]]:
    """The message payloads, in stream order."""
    return [data for event, data, _ in events if event == "message"]


def finished(run_id: str) -> Callable[[list[Event]], bool]:
    """Stop once the run's terminal status was streamed."""
    def stop(events: list[Event]) -> bool:
        return any(e == "status" and d.get("run_id") == run_id and d.get("status") in ("completed", "failed")
                   for e, d, _ in events)
    return stop


def after_messages(count: int) -> Callable[[list[Event]], bool]:
    """Stop after ``count`` message events."""
    return lambda events: len(messages_of(events)) >= count
