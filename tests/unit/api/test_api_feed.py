"""The live feed fences streamed deltas: none for a turn whose message it already sent, none from an
attempt older than the newest it relayed for that turn (a killed attempt's late pieces). And a client
that was away while its run changed status learns the current status on reconnect: the notice went out
while it was gone, and a status is not in the transcript it catches up on."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lunora_jobs import Lunora, define_agent
from lunora_jobs.api import BearerTokenAuthenticator, create_app
from lunora_jobs.api.testing import serve_in_thread
from lunora_jobs.client import Client, StreamEvent


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Lunora]]:
    app = Lunora(agents=[define_agent(name="talker", instructions="Talk.", model="offline")],
                 database_url=f"sqlite:///{tmp_path}/f.db")
    app.store.ensure_tables()
    try:
        with serve_in_thread(create_app(app, BearerTokenAuthenticator({"tok": "alice"}))) as url:
            yield url, app
    finally:
        app.close()


def _delta(run_id: str, generation: int, offset: int, text: str) -> dict[str, Any]:
    return {"type": "delta", "run_id": run_id, "turn": 0, "attempt": generation, "generation": generation,
            "offset": offset, "text": text}


def test_stale_and_answered_deltas_never_reach_the_client(served: tuple[str, Lunora]) -> None:
    url, app = served
    client = Client(url, token="tok")
    done = client.run("talker", "hello", thread_key="t-f")  # in-process: finished when this returns
    assert client.wait(done.id).status == "completed"
    notices = [
        _delta(done.id, 9, 0, "answered"),  # its turn's message is stored and sent: dropped
        _delta("r-next", 2, 0, "new "),
        _delta("r-next", 1, 4, "stale"),  # an older attempt of the same turn: dropped
        _delta("r-next", 3, 0, "newer"),  # a newer attempt starts over
        {"type": "status", "status": "completed", "run_id": "r-next"},
    ]
    seen: list[Any] = []
    for event in client.subscribe("t-f"):
        seen.append(event)
        if event.type == "message" and event.id == 2:  # caught up: now the live part
            threading.Thread(target=lambda: [app.events.publish("t-f", n) for n in notices]).start()
        if event.type == "status" and event.data["run_id"] == "r-next":
            break
    deltas = [(e.data["run_id"], e.data["generation"], e.data["offset"], e.data["text"])
              for e in seen if e.type == "delta"]
    assert deltas == [("r-next", 2, 0, "new "), ("r-next", 3, 0, "newer")]
    assert all(e.id is None for e in seen if e.type == "delta")  # transient: Last-Event-ID stays a seq


def _until_status(client: Client, thread_key: str, last_event_id: int | None,
                  run_id: str) -> list[StreamEvent]:
    seen: list[StreamEvent] = []
    for event in client.subscribe(thread_key, last_event_id=last_event_id, read_timeout=10):
        seen.append(event)
        if event.type == "status" and event.data["run_id"] == run_id:
            return seen
    raise AssertionError("the stream ended")


def test_a_resume_after_the_run_ended_gets_the_rest_and_the_terminal_status(
        served: tuple[str, Lunora]) -> None:
    url, _ = served
    client = Client(url, token="tok")
    run = client.run("talker", "hello", thread_key="t-r")  # in-process: finished when this returns
    assert client.wait(run.id).status == "completed"
    seen = _until_status(client, "t-r", 1, run.id)  # it held the user message only
    assert [e.type for e in seen] == ["snapshot", "message", "status"]
    assert seen[1].id == 2 and seen[1].data["role"] == "assistant"
    assert seen[2].data == {"run_id": run.id, "status": "completed"}


def test_a_client_holding_the_last_message_still_gets_the_status_it_missed(
        served: tuple[str, Lunora]) -> None:
    url, _ = served
    client = Client(url, token="tok")
    first = client.run("talker", "one", thread_key="t-h")
    second = client.run("talker", "two", thread_key="t-h")
    assert client.wait(second.id).status == "completed"
    seen = _until_status(client, "t-h", 4, second.id)  # it saw every message, then lost the connection
    assert [e.type for e in seen] == ["snapshot", "status"]
    assert all(e.data["run_id"] != first.id for e in seen if e.type == "status")  # behind the cursor


def test_a_status_sent_on_connect_is_not_repeated_by_its_notice_but_its_approvals_are(
        served: tuple[str, Lunora]) -> None:
    url, app = served
    client = Client(url, token="tok")
    run = client.run("talker", "hello", thread_key="t-d")
    assert client.wait(run.id).status == "completed"
    # The notices a feed may find queued behind its opening read: the same status again, then news.
    notices = [{"type": "status", "run_id": run.id, "status": "completed"},
               {"type": "status", "run_id": run.id, "status": "running"},
               {"type": "status", "run_id": "r-next", "status": "completed"}]
    seen: list[StreamEvent] = []
    for event in client.subscribe("t-d", read_timeout=10):
        seen.append(event)
        if event.type == "status" and len(seen) == 4:  # snapshot, the two messages, the opening status
            threading.Thread(target=lambda: [app.events.publish("t-d", n) for n in notices]).start()
        if event.type == "status" and event.data["run_id"] == "r-next":
            break
    statuses = [(e.data["run_id"], e.data["status"]) for e in seen if e.type == "status"]
    assert statuses == [(run.id, "completed"), (run.id, "running"), ("r-next", "completed")]
    # The approvals are read again after each notice, the repeated one too: a status the feed read
    # on connect may be newer than its snapshot's approvals, and the notice is when they are re-read.
    assert [e.type for e in seen[3:]] == ["status", "approvals", "approvals", "status", "approvals", "status"]
