"""Synced state (seeded once, absolute replace, no-op writes publish nothing) and the owner gate."""

from __future__ import annotations

import time
from typing import Any

import pytest

from lunora_jobs import (
    ConflictError,
    NotFoundError,
    ToolContext,
    define_agent,
    final_turn,
    tool,
    tool_call_turn,
    tool_calls_turn,
)
from lunora_jobs.store import InMemoryStore
from lunora_jobs.testing import agent_harness


@tool
def advance(note: str, ctx: ToolContext) -> str:
    """Record the next step of the plan (idempotent read-modify-write, as the docs teach)."""
    current = ctx.get_state() or {"applied": [], "plan": [], "step": 0}
    if ctx.idempotency_key in current["applied"]:
        return "recorded"
    ctx.set_state({"applied": [*current["applied"], ctx.idempotency_key],
                   "plan": [*current["plan"], note], "step": current["step"] + 1})
    return "recorded"


@tool
def rewrite(value: dict[str, Any], ctx: ToolContext) -> str:
    """Replace the whole state with ``value``."""
    ctx.set_state(value)
    return "ok"


def planner(**options: Any) -> Any:
    return define_agent(name=options.pop("name", "planner"), model="offline", tools=[advance, rewrite],
                        **options)


def state_events(harness: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    harness.app.events.subscribe(lambda e: seen.append(e) if e["type"] == "state" else None)
    return seen


def test_initial_state_is_seeded_once_and_tools_read_and_replace_it() -> None:
    agent = planner(initial_state={"applied": [], "plan": [], "step": 0})
    harness = agent_harness(agent, script=[
        tool_call_turn("c1", "advance", {"note": "draft"}), tool_call_turn("c2", "advance", {"note": "send"}),
        final_turn("planned"),
    ])
    seen = state_events(harness)
    harness.run(input="plan it", thread_key="t", owner="u7")
    state = harness.app.threads.state("t", viewer="u7")
    assert state == {"applied": ["tool:advance:c1", "tool:advance:c2"], "plan": ["draft", "send"], "step": 2}
    assert [e["state"]["step"] for e in seen] == [1, 2] and {e["thread_key"] for e in seen} == {"t"}


def test_first_writer_wins_the_seed() -> None:
    store = InMemoryStore()
    one = agent_harness(planner(name="one", initial_state={"seed": "one"}), script=[final_turn("a")],
                        store=store)
    two = agent_harness(planner(name="two", initial_state={"seed": "two"}),
                        script=[final_turn("a"), final_turn("b")], store=store)
    one.run(input="hi", thread_key="t")
    two.run(input="hi again", thread_key="t")
    assert store.get_thread("t") is not None
    assert two.thread("t").state == {"seed": "one"}


def test_a_same_json_write_changes_nothing_and_publishes_nothing() -> None:
    agent = planner(initial_state={"a": 1, "b": [1, 2]})
    harness = agent_harness(agent, script=[
        tool_calls_turn([("c1", "rewrite", {"value": {"b": [1, 2], "a": 1}})]),  # same JSON, other key order
        tool_call_turn("c2", "rewrite", {"value": {"a": 2}}),
        tool_call_turn("c3", "rewrite", {"value": {"a": 2}}),  # same as the previous write
        final_turn("done"),
    ])
    seen = state_events(harness)
    patches: list[dict[str, Any]] = []
    real_patch = harness.store.patch_thread

    def counting_patch(thread_id: str, **fields: Any) -> None:
        if "state" in fields:
            patches.append(fields["state"])
        real_patch(thread_id, **fields)

    harness.store.patch_thread = counting_patch  # type: ignore[method-assign]
    harness.run(input="go", thread_key="t")
    assert [e["state"] for e in seen] == [{"a": 2}]
    assert patches == [{"a": 2}]
    assert harness.thread("t").state == {"a": 2}


def test_set_state_refuses_what_json_cannot_hold() -> None:
    @tool
    def bad(ctx: ToolContext) -> str:
        """Write a set."""
        ctx.set_state({"s": {1, 2}})
        return "unreachable"

    agent = define_agent(name="bad", model="offline", tools=[bad], max_attempts=1, initial_state={"ok": True})
    harness = agent_harness(agent, script=[tool_call_turn("c1", "bad", {}), final_turn("done")])
    harness.run(input="go", thread_key="t")
    assert harness.thread("t").state == {"ok": True}
    tool_message = next(m for m in harness.messages("t") if m.role == "tool")
    assert "JSON" in (tool_message.content or "")


def _error(fn: Any) -> tuple[type[BaseException], str]:
    with pytest.raises(NotFoundError) as info:
        fn()
    return type(info.value), str(info.value)


def test_a_stranger_cannot_tell_an_owned_thread_from_a_missing_one() -> None:
    harness = agent_harness(planner(initial_state={"secret": 1}), script=[
        tool_call_turn("c1", "rewrite", {"value": {"secret": 2}}), final_turn("ok"),
    ])
    harness.run(input="hi", thread_key="t", owner="alice")
    threads, approvals = harness.app.threads, harness.app.approvals
    owner_view = threads.get("t", viewer="alice")
    assert owner_view.owner == "alice" and threads.state("t", viewer="alice") == {"secret": 2}
    for viewer in ("mallory", None):
        for read in (threads.get, threads.messages, threads.state, approvals.pending):
            stranger = _error(lambda read=read, viewer=viewer: read("t", viewer=viewer))
            missing = _error(lambda read=read, viewer=viewer: read("nope", viewer=viewer))
            assert stranger == (NotFoundError, "no thread 't'")
            assert missing == (NotFoundError, "no thread 'nope'")
        stranger = _error(lambda viewer=viewer: approvals.resolve("t", "c1", approve=True, viewer=viewer))
        assert stranger == (NotFoundError, "no thread 't'")


def test_the_gate_costs_the_same_for_a_stranger_and_a_missing_thread() -> None:
    harness = agent_harness(planner(), script=[final_turn("ok")])
    harness.run(input="hi", thread_key="t", owner="alice")
    reads: list[str] = []
    real = harness.store.get_thread

    def counting(key: str) -> Any:
        reads.append(key)
        return real(key)

    harness.store.get_thread = counting  # type: ignore[method-assign]
    durations: dict[str, list[float]] = {"t": [], "nope": []}
    for _ in range(200):
        for key in ("t", "nope"):
            start = time.perf_counter()
            with pytest.raises(NotFoundError):
                harness.app.threads.messages(key, viewer="mallory")
            durations[key].append(time.perf_counter() - start)
    # The same work either way: one keyed read, then the same error (no transcript read for a stranger).
    assert reads.count("t") == reads.count("nope") == 200
    median = {k: sorted(v)[len(v) // 2] for k, v in durations.items()}
    assert median["t"] < 5 * median["nope"] and median["nope"] < 5 * median["t"]


def test_the_owner_cannot_be_changed_after_the_first_run() -> None:
    harness = agent_harness(planner(), script=[final_turn("one"), final_turn("two")])
    harness.run(input="hi", thread_key="t", owner="alice")
    with pytest.raises(ConflictError, match="owner"):
        harness.run(input="mine now", thread_key="t", owner="mallory")
    assert harness.thread("t").owner == "alice"
    assert len(harness.store.list_runs()) == 1
