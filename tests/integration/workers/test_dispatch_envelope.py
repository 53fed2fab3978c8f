"""``CeleryDispatcher``'s direct LPUSH on Redis writes exactly the message kombu's publish writes (but
for the random delivery tag), so a worker cannot tell them apart; and a real worker runs both."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from lunora_jobs.config import StepRoute
from lunora_jobs.engine.dispatch import StepTask
from workers.dispatch import CeleryDispatcher

pytestmark = pytest.mark.integration

TASKS = [
    StepTask("run-1", "llm:turn:0", "turn"),
    StepTask("run-1", "tool:search:c1", "tool"),
    StepTask("run-2", "memory:retrieve", "step"),
    StepTask("run-3", "llm:turn:2", "turn", 1.5),  # a retry's countdown: an eta header
]


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    check = redis.Redis.from_url(redis_url)
    yield check
    check.close()


def _messages(client: redis.Redis, key: str) -> list[dict[str, object]]:
    found = []
    for raw in reversed(client.lrange(key, 0, -1)):  # LPUSH: the newest first
        message = json.loads(raw)
        properties = message["properties"]
        assert isinstance(properties, dict) and len(str(properties.pop("delivery_tag"))) == 36
        headers = message["headers"]
        assert isinstance(headers, dict)
        if headers.get("eta"):
            headers["eta"] = "<eta>"  # a countdown's eta is "now + delay": it differs by the time between
        found.append(message)
    return found


@pytest.mark.parametrize("routed", [False, True])
def test_direct_envelope_equals_kombus(
    client: redis.Redis, redis_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch, routed: bool
) -> None:
    direct_q, kombu_q, tools_q = f"{redis_prefix}-direct", f"{redis_prefix}-kombu", f"{redis_prefix}-tools"
    routes = {"tool": StepRoute(queue=tools_q, priority=None if not routed else 3)} if routed else {}
    direct = CeleryDispatcher(broker_url=redis_url, queue=direct_q, routes=routes)
    kombu = CeleryDispatcher(broker_url=redis_url, queue=kombu_q, routes=routes)
    keys = [direct_q, kombu_q, tools_q] + [f"{tools_q}\x06\x16{p}" for p in range(10)]
    try:
        for task in TASKS:
            direct.dispatch([task])
        direct.dispatch(TASKS[:2])  # a fan-out: one pipeline
        direct_msgs = _messages(client, direct_q)
        direct_tools = [m for key in keys[2:] for m in _messages(client, key)]
        client.delete(*keys)
        with monkeypatch.context() as patched:
            patched.setattr(CeleryDispatcher, "_direct", lambda self, channel: False)
            for task in TASKS:
                kombu.dispatch([task])
            kombu.dispatch(TASKS[:2])
        kombu_msgs = _messages(client, kombu_q)
        kombu_tools = [m for key in keys[2:] for m in _messages(client, key)]
    finally:
        client.delete(*keys, *[f"_kombu.binding.{q}" for q in (direct_q, kombu_q, tools_q)])
    assert len(direct_msgs) + len(direct_tools) == 6
    for mine, theirs in zip(direct_msgs, kombu_msgs, strict=True):
        info = mine["properties"]["delivery_info"]  # type: ignore[index]
        assert info == {"exchange": "", "routing_key": direct_q}
        info["routing_key"] = kombu_q  # type: ignore[index]
        assert mine == theirs
    assert direct_tools == kombu_tools


def test_redis_error_falls_back_to_kombu(
    client: redis.Redis, redis_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed direct LPUSH hands the publish to kombu, whose retry policy reconnects and sends."""
    queue = f"{redis_prefix}-fallback"
    dispatcher = CeleryDispatcher(broker_url=redis_url, queue=queue)
    calls: list[int] = []

    def failing(self: CeleryDispatcher, channel: object, tasks: object) -> bool:
        calls.append(1)
        return False

    monkeypatch.setattr(CeleryDispatcher, "_lpush", failing)
    try:
        dispatcher.dispatch([StepTask("run-1", "llm:turn:0", "turn")])
        assert calls == [1] and client.llen(queue) == 1
    finally:
        client.delete(queue, f"_kombu.binding.{queue}")
