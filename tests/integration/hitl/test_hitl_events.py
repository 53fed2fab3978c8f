"""Synced state over Redis pub/sub: a change is published once on the thread's channel, a no-op never."""

from __future__ import annotations

import json
import time

import pytest
import redis
from hitl_fleet import HitlFleet

from lunora_jobs.engine.keys import thread_events_channel
from lunora_jobs.errors import NotFoundError

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_state_changes_reach_the_thread_channel_once_and_no_op_writes_publish_nothing(
    fleet: HitlFleet,
) -> None:
    listener = redis.Redis.from_url(fleet.redis_url).pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
    listener.subscribe(thread_events_channel(fleet.prefix, "t-state"))
    try:
        fleet.start_worker()
        handle = fleet.app.agents.payer.run(input="remember milk", thread_key="t-state", owner="u7")
        assert fleet.wait_status(handle.id, "completed", "failed").status == "completed"
        events: list[dict[str, object]] = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            message = listener.get_message(timeout=0.2)
            if message is not None:
                events.append(json.loads(message["data"]))
            if any(e.get("status") == "completed" for e in events):
                break
    finally:
        listener.close()
    states = [e["state"] for e in events if e["type"] == "state"]
    assert states == [{"note": "milk"}], events  # the tool wrote twice; the second was a no-op
    assert {e["thread_key"] for e in events} == {"t-state"}
    assert [e["status"] for e in events if e["type"] == "status"][-1] == "completed"
    # Readable by the owner through the gated thread API, invisible to anyone else.
    assert fleet.app.threads.state("t-state", viewer="u7") == {"note": "milk"}
    with pytest.raises(NotFoundError, match="no thread 't-state'"):
        fleet.app.threads.state("t-state", viewer="mallory")
