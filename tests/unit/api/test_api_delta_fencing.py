"""The live feed fences streamed deltas: none for a turn whose message it already sent, none from an
attempt older than the newest it relayed for that turn (a killed attempt's late pieces)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lunora_jobs import Lunora, define_agent
from lunora_jobs.api import BearerTokenAuthenticator, create_app
from lunora_jobs.api.testing import serve_in_thread
from lunora_jobs.client import Client


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
        if event.type == "status":
            break
    deltas = [(e.data["run_id"], e.data["generation"], e.data["offset"], e.data["text"])
              for e in seen if e.type == "delta"]
    assert deltas == [("r-next", 2, 0, "new "), ("r-next", 3, 0, "newer")]
    assert all(e.id is None for e in seen if e.type == "delta")  # transient: Last-Event-ID stays a seq
