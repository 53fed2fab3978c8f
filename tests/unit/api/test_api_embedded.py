"""The embedded mode (SQLite, in-process dispatch, no Redis): the API and its stream still work, with
live updates from the app's in-process event bus."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lunora_jobs import Lunora, define_agent
from lunora_jobs.api import BearerTokenAuthenticator, create_app
from lunora_jobs.api.testing import serve_app, serve_in_thread
from lunora_jobs.client import AsyncClient, Client
from lunora_jobs.models import ScriptedModel
from lunora_jobs.testing import final_turn


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Lunora]]:
    agent = define_agent(name="echo", instructions="Echo.", model="offline")
    app = Lunora(agents=[agent], database_url=f"sqlite:///{tmp_path}/api.db",
                 model=ScriptedModel([final_turn("first"), final_turn("second")]))
    with serve_app(app, BearerTokenAuthenticator({"tok": "alice"}), heartbeat_s=0.5) as url:
        yield url, app


def test_embedded_api_streams_from_the_in_process_bus(served: tuple[str, Lunora]) -> None:
    url, _ = served
    client = Client(url, token="tok")
    first = client.run("echo", "hi", thread_key="t-e")  # in-process dispatch: done when this returns
    assert client.wait(first.id).text == "first"
    seen: list[Any] = []
    for event in client.subscribe("t-e"):
        seen.append(event)
        if event.type == "message" and event.id == 2:
            # Continue the thread from another thread while we are subscribed: the new messages and
            # the status arrive live from the in-process bus.
            threading.Thread(target=client.run, args=("echo", "again"), kwargs={"thread_key": "t-e"}).start()
        # (the first run's status comes on connect)
        new_run = event.type == "status" and event.data["run_id"] != first.id
        if new_run and event.data["status"] == "completed":
            break
    messages = [e.data["content"] for e in seen if e.type == "message"]
    assert messages == ["hi", "first", "again", "second"]
    assert [e.id for e in seen if e.type == "message"] == [1, 2, 3, 4]
    assert seen[0].type == "snapshot"


def test_async_client(served: tuple[str, Lunora]) -> None:
    url, _ = served
    asyncio.run(_async_client(url))
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/threads/t-a", timeout=5).raise_for_status()


async def _async_client(url: str) -> None:
    async with AsyncClient(url, token="tok") as client:
        run = await client.run("echo", "hi", thread_key="t-a")
        assert (await client.wait(run.id)).text == "first"
        assert [m.role for m in await client.messages("t-a")] == ["user", "assistant"]
        assert await client.state("t-a") is None
        async for event in client.subscribe("t-a", last_event_id=1):
            assert event.type == "snapshot" or (event.type == "message" and event.id == 2)
            if event.type == "message":
                break


class _Refused(Exception):
    status_code = 400  # like an SDK's error: terminal, the run fails at once


class _Flaky:
    """Refuses every call until ``fixed``."""

    name = "flaky"
    fixed = False

    def generate(self, messages: Any, **options: Any) -> Any:
        if not self.fixed:
            raise _Refused("HTTP 400")
        return final_turn("fixed now")


def test_clients_retry_a_failed_run(tmp_path: Path) -> None:
    from lunora_jobs.client.errors import ApiConflictError, ApiNotFoundError

    model = _Flaky()
    app = Lunora(agents=[define_agent(name="flaky", instructions="Try.", model=model)],
                 database_url=f"sqlite:///{tmp_path}/retry.db")
    app.store.ensure_tables()
    api = create_app(app, BearerTokenAuthenticator({"tok": "alice", "other": "bob"}))
    try:
        with serve_in_thread(api) as url:
            client = Client(url, token="tok")
            first, second = (client.run("flaky", "hi", thread_key=f"t-{n}") for n in (1, 2))
            assert client.get_run(first.id).status == client.get_run(second.id).status == "failed"
            with pytest.raises(ApiNotFoundError):
                Client(url, token="other").retry(first.id)  # another owner's run
            model.fixed = True
            assert client.retry(first.id) == ["llm:turn:0"]  # in-process: done when this returns
            assert client.get_run(first.id).text == "fixed now"
            with pytest.raises(ApiConflictError):
                client.retry(first.id)  # completed, not failed

            async def retry_async() -> list[str]:
                async with AsyncClient(url, token="tok") as aclient:
                    return await aclient.retry(second.id)

            assert asyncio.run(retry_async()) == ["llm:turn:0"]
            assert client.get_run(second.id).status == "completed"
    finally:
        app.close()
