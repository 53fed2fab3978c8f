"""A model API answering HTTP 429 with Retry-After: the step waits as told, and the run completes.

The OpenAI adapter runs against a local OpenAI-wire server with the SDK's own retries turned off
(``max_retries=0``), so every 429 fails one attempt of the turn step; the engine's backoff
(``engine/backoff.py``) honours the server's ``Retry-After`` before the next attempt.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai_chat_server import ChatServer, chat_server, reply

from lunora_jobs import Lunora
from lunora_jobs.agent import define_agent
from lunora_jobs.models.openai import OpenAIModel
from lunora_jobs.store import InMemoryStore

pytestmark = pytest.mark.integration

RATE_LIMITED = 5
RETRY_AFTER_S = 1


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as state:
        yield state


def test_five_429s_with_retry_after_then_200_complete_the_run_with_the_waits_honoured(
    server: ChatServer,
) -> None:
    server.fail_status = [429] * RATE_LIMITED
    server.fail_headers = {"retry-after": str(RETRY_AFTER_S)}
    server.replies = [reply(content="paid once")]
    model = OpenAIModel("test-model", api_key="sk-local", base_url=server.base_url, max_retries=0)
    agent = define_agent(name="limited", instructions="Answer.", model=model, max_attempts=RATE_LIMITED + 1)
    app = Lunora([agent], store=InMemoryStore())
    try:
        handle = app.agents.limited.run(input="hi", thread_key="t-429")
        result = app.agents.limited.wait(handle.id, timeout=60)
        assert result.status == "completed" and result.text == "paid once", result
        step = app.store.get_step(handle.id, "llm:turn:0")
        assert step is not None and step.attempt == RATE_LIMITED + 1 and step.status == "completed"
        assert len(server.requests) == RATE_LIMITED + 1  # no SDK retry: one request per attempt
        gaps = [b - a for a, b in zip(server.times, server.times[1:], strict=False)]
        # Each wait is the server's Retry-After (not a jittered guess, not at once), and no longer.
        assert all(RETRY_AFTER_S <= gap < RETRY_AFTER_S + 0.75 for gap in gaps), gaps
    finally:
        app.close()
