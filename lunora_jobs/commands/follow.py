"""Following a thread live in the terminal: each new message as it lands, tool calls and their
results, and what a run waits on (an approval, with the command that gives it).

It reads the store (``list_messages_after``: one index range per poll), so it works the same against
the embedded default and a worker fleet, and survives a reconnect: it just asks again from the last
``seq`` it printed.
"""

from __future__ import annotations

import json
import time
from typing import Any

import typer

from lunora_jobs.runtime.app import Lunora

TERMINAL = frozenset({"completed", "failed", "cancelled"})


def render(message: Any) -> list[str]:
    """Lines for one message: role and text, each tool call, a tool result."""
    lines: list[str] = []
    if message.role == "tool":
        lines.append(f"  ← {message.name or 'tool'} [{message.tool_call_id}]: {_short(message.content)}")
        return lines
    if message.content:
        lines.append(f"{message.role}: {message.content}")
    for call in message.tool_calls or []:
        name = call.get("name") or call.get("function", {}).get("name")
        args = call.get("arguments") or call.get("function", {}).get("arguments")
        shown = _short(args if isinstance(args, str) else json.dumps(args))
        lines.append(f"  → {name}({shown}) [{call.get('id')}]")
    return lines


def _short(text: str | None, width: int = 160) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def follow(app: Lunora, run_id: str, thread_key: str, *, timeout: float, poll_s: float = 0.2) -> str:
    """Print the thread's new messages until the run ends or waits for an approval; returns the run's
    status then. ``TimeoutError`` after ``timeout`` seconds."""
    store = app.store
    thread = store.get_thread(thread_key)
    assert thread is not None  # the run was started on it
    after = _seq_before(app, run_id, thread.id)
    deadline = time.monotonic() + timeout
    while True:
        # The status first, then the messages: a run's last messages are written with its final status
        # (one statement), so a run read as ended has every message in the read that follows.
        run = store.get_run(run_id)
        status = "missing" if run is None else run.status
        for message in store.list_messages_after(thread.id, after, 200):
            after = message.seq
            for line in render(message):
                typer.echo(line)
        if status in TERMINAL or status == "missing":
            return status
        if status == "awaiting_input":
            for pending in app.approvals.pending(thread_key, trusted=True):
                typer.echo(f"waiting for approval of {pending.tool_name}({json.dumps(pending.input)}): "
                           f"lunora approve {thread_key} {pending.tool_call_id} [--reject]")
            return status
        if time.monotonic() >= deadline:
            raise TimeoutError(f"run {run_id} still {status} after {timeout:g}s; `lunora runs show {run_id}`")
        time.sleep(poll_s)


def _seq_before(app: Lunora, run_id: str, thread_id: str) -> int:
    """The seq just before the run's first message: follow prints this run, not the thread's past."""
    messages = app.store.list_messages(thread_id)
    mine = [m.seq for m in messages if m.run_id == run_id]
    return min(mine) - 1 if mine else max((m.seq for m in messages), default=0)
