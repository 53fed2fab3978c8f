"""Token streaming end to end: a Celery worker runs a turn through the real OpenAI adapter against an
OpenAI-wire server that streams its answer in pieces; the text reaches the thread's live stream (SSE
through ``lunora api``, via Redis pub/sub) while the turn runs, and the persisted message replaces it.
A worker killed mid-turn: the retry streams under a higher generation, the killed attempt's pieces
are never shown after it, and the stored answer is the retry's, exactly."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from api_stack import ApiStack
from stream_support import Event, finished, read_sse

sys.path.append(str(Path(__file__).resolve().parents[1] / "models"))
from openai_chat_server import ChatServer, chat_server, reply

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TEXT = ("Durable agents stream their answers while the turn runs: every piece reaches the browser at "
        "once, and the stored message, written when the turn completes, is the one that stays. ") * 2


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as state:
        state.stream_piece = 6
        yield state


@pytest.fixture
def stack_env(server: ChatServer) -> dict[str, str]:
    # A killed turn's lease lapses within LUNORA_LEASE_S (6 s by default); the sweep then retries it.
    return {"API_STREAM_MODEL_URL": server.base_url}


def _deltas(events: list[Event]) -> list[dict[str, Any]]:
    return [data for event, data, _ in events if event == "delta"]


def _answer_index(events: list[Event], run_id: str) -> int:
    return next(i for i, (event, data, _) in enumerate(events)
                if event == "message" and data["role"] == "assistant" and data["run_id"] == run_id)


def test_deltas_stream_while_the_turn_runs_and_the_message_replaces_them(
    stack: ApiStack, server: ChatServer
) -> None:
    server.stream_delay_s = 0.03
    server.replies.append(reply(content=TEXT))
    stack.start_worker()
    api = stack.start_api()
    body = {"agent": "streamer", "input": "Tell me about streaming.", "thread_key": "t-tok"}
    run_id = stack.client(api, "alice").post("/runs", json=body).json()["id"]
    events, _ = read_sse(f"{api.url}/threads/t-tok/events", stack.auth("alice"), finished(run_id))

    answer = _answer_index(events, run_id)
    assert events[answer][1]["content"] == TEXT
    before, after = _deltas(events[:answer]), _deltas(events[answer:])
    assert len(before) >= 5, "the text streamed in pieces before the message"
    assert after == [], "no delta of a turn after its message"
    # Pieces are contiguous from the first one this client saw, and join to the stored text.
    first = before[0]["offset"]
    assert [d["offset"] for d in before] == [first + sum(len(d["text"]) for d in before[:i])
                                             for i in range(len(before))]
    assert TEXT[first:] == "".join(d["text"] for d in before)
    assert {(d["run_id"], d["turn"], d["generation"]) for d in before} == {(run_id, 0, 1)}
    assert server.requests[-1]["stream"] is True and server.requests[-1]["stream_options"]["include_usage"]
    assert stack.app.store.get_run(run_id).output_tokens == 7  # usage from the streamed turn


def test_a_turn_killed_mid_stream_restarts_under_a_newer_generation(
    stack: ApiStack, server: ChatServer
) -> None:
    server.hold_after = 4  # the first attempt streams 3 pieces (after the role chunk), then hangs
    server.stream_delay_s = 0.08  # apart enough that each piece is published on its own
    server.replies += [reply(content=TEXT), reply(content=TEXT)]
    api = stack.start_api()
    body = {"agent": "streamer", "input": "Tell me about recovery.", "thread_key": "t-kill"}
    run_id = stack.client(api, "alice").post("/runs", json=body).json()["id"]
    live, mid_stream, stop = threading.Event(), threading.Event(), threading.Event()
    killed: list[float] = []
    errors: list[BaseException] = []
    stages: list[str] = []  # what the recovery thread reached, for a failure's message
    dispatched: list[str] = []

    def stage(what: str) -> None:
        stages.append(f"{time.strftime('%H:%M:%S')} {what}")

    def recover() -> None:
        try:
            # Deltas are transient: a worker started before the stream is live could stream all three
            # pieces to nobody (the run waits in the queue until then).
            live.wait(60)
            first = stack.start_worker()
            stage("first worker ready")
            mid_stream.wait(60)
            first.kill()  # SIGKILL mid-turn: the model's stream is cut, nothing is recorded
            killed.append(time.monotonic())
            stage("first worker killed")
            server.stream_delay_s = 0.0
            server.release.set()
            stack.start_worker()
            stage("second worker ready")
            while not stop.wait(0.5):  # what beat's tick does: re-dispatch once the lease expired
                report = stack.app.sweep(grace_ms=500)
                dispatched.extend(f"{time.strftime('%H:%M:%S')} {t}" for t in report.dispatched)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    held = 3 * server.stream_piece  # what the first attempt streams before it hangs

    def watch(events: list[Event]) -> bool:
        live.set()
        # By text, not by count: pieces that reach the worker together are published as one delta.
        if sum(len(d["text"]) for d in _deltas(events)) >= held:
            mid_stream.set()
        return finished(run_id)(events)

    helper = threading.Thread(target=recover, daemon=True)
    helper.start()
    def explain() -> str:
        steps = stack.app.store.list_steps(run_id)
        ledger = [(s.name, s.status, s.attempt, s.lease_expires_at, s.error) for s in steps]
        run = stack.app.store.get_run(run_id)
        return (f"recovery errors: {errors}\nstages: {stages}\nsweep dispatched: {dispatched}\n"
                f"run: {run and (run.status, run.error)}, ledger: {ledger}, "
                f"model requests: {len(server.requests)}\n{stack.logs()}")

    try:
        events, _ = read_sse(f"{api.url}/threads/t-kill/events", stack.auth("alice"), watch, timeout=150)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{explain()}") from None
    finally:
        stop.set()
        helper.join(timeout=30)
    completed = ("status", {"run_id": run_id, "status": "completed"}, None)
    assert completed in events, explain()
    assert not errors, errors
    assert killed, "the stream never showed the first attempt's text before the kill"
    answer = _answer_index(events, run_id)
    assert events[answer][1]["content"] == TEXT
    deltas = _deltas(events[:answer])
    generations = [d["generation"] for d in deltas]
    assert generations == sorted(generations), "a killed attempt's piece arrived after the retry's"
    old, new = min(generations), max(generations)
    assert new > old
    retry = [d for d in deltas if d["generation"] == new]
    assert retry[0]["offset"] == 0 and "".join(d["text"] for d in retry) == TEXT  # starts over, whole
    assert _deltas(events[answer:]) == []
    steps = {s.name: s for s in stack.app.store.list_steps(run_id)}
    assert steps["llm:turn:0"].status == "completed" and steps["llm:turn:0"].attempt >= 2
    messages = stack.stored_transcript("t-kill")
    assert [m["role"] for m in messages] == ["user", "assistant"]  # the killed attempt left nothing
