"""The live thread stream: SSE and WebSocket resume with Last-Event-ID across two API processes, fed by
Redis pub/sub from a Celery worker; the transcript a reconnecting client assembles equals the stored one."""

from __future__ import annotations

import time

import pytest
from api_stack import ApiStack
from stream_support import after_messages, finished, messages_of, read_sse, read_ws

from lunora_jobs.client import Client

pytestmark = [pytest.mark.integration, pytest.mark.slow]

COUNT = 6  # user + 6 x (assistant call + tool result) + final answer = 14 messages over ~2 s
LIVE_BOUND_S = 1.5
"""Commit to the client's receipt, through the worker's publish, Redis, the API process and its read."""


def test_sse_resume_across_two_api_processes_gives_the_exact_transcript(stack: ApiStack) -> None:
    stack.start_worker()
    first, second = stack.start_api(), stack.start_api()
    auth = stack.auth("alice")
    run_id = stack.client(first, "alice").post(
        "/runs", json={"agent": "support", "input": f"count {COUNT}", "thread_key": "t-sse"}).json()["id"]

    before, _ = read_sse(f"{first.url}/threads/t-sse/events", auth, after_messages(4))
    assert stack.app.store.get_run(run_id).status == "running", "the disconnect must happen mid-run"
    snapshot = [d for e, d, _ in before if e == "snapshot"]
    assert snapshot and snapshot[0]["status"] == "running"
    last_id = [i for e, _, i in before if e == "message"][-1]
    # Reconnect to the OTHER API process with Last-Event-ID: the rest arrives through Redis pub/sub.
    after, _ = read_sse(f"{second.url}/threads/t-sse/events", {**auth, "Last-Event-ID": str(last_id)},
                        finished(run_id))

    received = messages_of(before) + messages_of(after)
    stored = stack.stored_transcript("t-sse")
    assert len(stored) == 2 + 2 * COUNT
    assert received == stored  # no gap, no duplicate, same content
    ids = [i for e, _, i in before + after if e == "message"]
    assert ids == [m["seq"] for m in stored]
    # Live events from the worker reached the second process: messages and the final status.
    kinds = {e for e, _, _ in after}
    assert {"message", "status"} <= kinds
    assert messages_of(after)[-1]["content"] == f"counted {COUNT}"


def test_websocket_resume_gives_the_exact_transcript(stack: ApiStack) -> None:
    stack.start_worker()
    first, second = stack.start_api(), stack.start_api()
    auth = stack.auth("alice")
    run_id = stack.client(first, "alice").post(
        "/runs", json={"agent": "support", "input": f"count {COUNT}", "thread_key": "t-ws"}).json()["id"]
    ws = first.url.replace("http://", "ws://")
    before = read_ws(f"{ws}/threads/t-ws/ws", auth, after_messages(3))
    assert stack.app.store.get_run(run_id).status == "running", "the disconnect must happen mid-run"
    last_id = [i for e, _, i in before if e == "message"][-1]
    ws2 = second.url.replace("http://", "ws://")
    after = read_ws(f"{ws2}/threads/t-ws/ws?last_event_id={last_id}", auth, finished(run_id))
    assert messages_of(before) + messages_of(after) == stack.stored_transcript("t-ws")


def test_stream_gates_and_heartbeats(stack: ApiStack) -> None:
    stack.start_worker()
    api = stack.start_api()  # LUNORA_API_HEARTBEAT_S=1 in the stack's environment
    alice = stack.client(api, "alice")
    body = {"agent": "support", "input": "hello", "thread_key": "t-hb"}
    run_id = alice.post("/runs", json=body).json()["id"]
    stack.wait_status(run_id, "completed")
    bob = stack.client(api, "bob")
    with bob.stream("GET", "/threads/t-hb/events") as hidden:
        assert hidden.status_code == 404
        assert hidden.headers["content-type"] == "application/problem+json"
    with stack.client(api).stream("GET", "/threads/t-hb/events") as anonymous:
        assert anonymous.status_code == 401
    # An idle stream keeps talking: heartbeat comments at the configured interval.
    seen: list[str] = []
    with alice.stream("GET", "/threads/t-hb/events", timeout=30) as response:
        for line in response.iter_lines():
            seen.append(line)
            if sum(1 for s in seen if s.startswith(": ping")) >= 2:
                break
    assert any(line.startswith("retry: ") for line in seen)
    assert sum(1 for line in seen if line.startswith("id: ")) == 2  # the two stored messages


def test_python_client_subscribe_reconnects_with_last_event_id(stack: ApiStack) -> None:
    stack.start_worker()
    api = stack.start_api()
    client = Client(api.url, token="tok-alice-0123456789")
    run = client.run("support", f"count {COUNT}", thread_key="t-client")
    received = []
    restarted = False
    for event in client.subscribe("t-client"):
        if event.type == "message":
            received.append(event.data)
        if len(received) == 5 and not restarted:
            # Take the API process down mid-stream and bring a new one up on the same port.
            restarted = True
            port = api.port
            api.stop()
            api = stack.start_api_on(port)
        if event.type == "status" and event.data["status"] == "completed":
            break
    assert restarted
    assert received == stack.stored_transcript("t-client")
    assert client.wait(run.id).text == f"counted {COUNT}"


def test_tool_results_arrive_by_notice_not_by_the_resync(stack: ApiStack) -> None:
    """With the safety re-read 10 minutes away, every message — a tool's result included — still
    reaches the stream within a bound of its commit: each write is announced by the worker."""
    stack.env["API_TICK_S"] = "0.5"  # the worker's ticks: a run of ~3 s
    stack.start_worker()
    api = stack.start_api(LUNORA_API_RESYNC_S="600")
    alice = stack.client(api, "alice")
    arrived: dict[int, float] = {}  # seq -> when this client received it

    def stamp(events: list[tuple[str, object, int | None]]) -> bool:
        event, _, seq = events[-1]
        if event == "message" and seq is not None:
            arrived[seq] = time.time()
        return finished(run_id)(events)

    body = {"agent": "support", "input": "count 4", "thread_key": "t-live"}
    run_id = alice.post("/runs", json=body).json()["id"]
    events, _ = read_sse(f"{api.url}/threads/t-live/events", stack.auth("alice"), stamp)
    stored = stack.stored_transcript("t-live")
    assert messages_of(events) == stored
    thread = stack.app.store.get_thread("t-live")
    assert thread is not None
    created = {m.seq: m.created_at / 1000 for m in stack.app.store.list_messages(thread.id)}
    tools = [m["seq"] for m in stored if m["role"] == "tool"]
    final = stored[-1]["seq"]
    assert len(tools) == 4
    for seq in tools[1:]:  # (the first may predate the subscription)
        lag = arrived[seq] - created[seq]
        assert lag < LIVE_BOUND_S, f"tool result {seq} arrived {lag:.2f} s after its commit"
    # Those followed by another 0.5 s tick arrived while the run still ran (no end-of-run catch-up).
    assert all(arrived[seq] < created[final] for seq in tools[1:-1])
