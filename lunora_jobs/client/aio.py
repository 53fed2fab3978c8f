"""``AsyncClient``: the HTTP API from asyncio code — the same surface as ``Client``, awaited.

Example::

    async with AsyncClient("http://127.0.0.1:8000", token="s3cret") as client:
        run = await client.run("support", "hi", thread_key="t1")
        async for event in client.subscribe("t1"):
            ...
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

from lunora_jobs.client import _protocol as p
from lunora_jobs.client.errors import ApiNotFoundError
from lunora_jobs.client.sse import SseParser
from lunora_jobs.client.types import Message, PendingApproval, Run, StreamEvent


class AsyncClient:
    """An asyncio client (httpx). ``token`` is sent as ``Authorization: Bearer``."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 30.0,
                 http: httpx.AsyncClient | None = None) -> None:
        self._http = http or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout,
                                               headers=p.auth_headers(token))

    async def run(self, agent: str, input: Any, *, thread_key: str | None = None, title: str | None = None,
                  idempotency_key: str | None = None) -> Run:
        """Start a run (or continue ``thread_key``)."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return p.runs(p.checked(await self._http.post(
            "/runs", json=p.start_body(agent, input, thread_key, title), headers=headers)))

    async def get_run(self, run_id: str) -> Run:
        """The run's status and, once over, its result."""
        return p.runs(p.checked(await self._http.get(p.run_path(run_id))))

    async def status(self, run_id: str) -> str:
        """The run's status."""
        return (await self.get_run(run_id)).status

    async def wait(self, run_id: str, timeout: float = 60.0, poll_s: float = 0.2) -> Run:
        """Poll until the run is over; ``TimeoutError`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            run = await self.get_run(run_id)
            if run.done:
                return run
            if time.monotonic() >= deadline:
                raise TimeoutError(f"run {run_id!r} still {run.status} after {timeout}s; wait longer.")
            await asyncio.sleep(poll_s)

    async def cancel(self, run_id: str) -> bool:
        """Cancel the run; False when it had already ended."""
        return bool(p.checked(await self._http.post(p.run_path(run_id, "/cancel")))["cancelled"])

    async def retry(self, run_id: str) -> list[str]:
        """Resume a failed run from the step it failed at; the steps given fresh attempts."""
        return list(p.checked(await self._http.post(p.run_path(run_id, "/retry")))["steps"])

    async def thread(self, thread_key: str) -> dict[str, Any]:
        """The thread."""
        data: dict[str, Any] = p.checked(await self._http.get(p.thread_path(thread_key)))
        return data

    async def messages(self, thread_key: str, *, after: int = 0) -> list[Message]:
        """The transcript after ``after`` (every page), oldest first."""
        out: list[Message] = []
        cursor: int | None = after
        while cursor is not None:
            page, cursor = p.messages(p.checked(await self._http.get(
                p.thread_path(thread_key, "/messages"), params={"after": cursor, "limit": 500})))
            out += page
        return out

    async def state(self, thread_key: str) -> Any:
        """The thread's synced state."""
        return p.checked(await self._http.get(p.thread_path(thread_key, "/state")))["state"]

    async def approvals(self, thread_key: str) -> list[PendingApproval]:
        """The tool calls waiting for a decision."""
        return p.approvals(p.checked(await self._http.get(p.thread_path(thread_key, "/approvals"))))

    async def approve(self, thread_key: str, tool_call_id: str, *, reason: str | None = None) -> str:
        """Approve a pending call."""
        return await self._decide(thread_key, tool_call_id, "approve", reason)

    async def reject(self, thread_key: str, tool_call_id: str, *, reason: str | None = None) -> str:
        """Reject a pending call."""
        return await self._decide(thread_key, tool_call_id, "reject", reason)

    async def _decide(self, thread_key: str, call_id: str, verb: str, reason: str | None,
                      kind: str = "approvals") -> str:
        path = p.decision_path(thread_key, call_id, verb, kind)
        response = await self._http.post(path, json={"reason": reason})
        return str(p.checked(response)["result"])

    async def proposals(self, thread_key: str, *, decision: str | None = None) -> list[dict[str, Any]]:
        """The thread's action proposals you may act on."""
        path = p.thread_path(thread_key, "/proposals")
        return list(p.checked(await self._http.get(path, params=p.query(decision=decision)))["proposals"])

    async def approve_proposal(self, thread_key: str, proposal_id: str, *, reason: str | None = None) -> str:
        """Approve an action proposal."""
        return await self._decide(thread_key, proposal_id, "approve", reason, "proposals")

    async def reject_proposal(self, thread_key: str, proposal_id: str, *, reason: str | None = None) -> str:
        """Reject an action proposal."""
        return await self._decide(thread_key, proposal_id, "reject", reason, "proposals")

    async def usage(self, group_by: str | None = None, **filters: str | None) -> list[dict[str, Any]]:
        """Usage groups, narrowed to what your identity may read."""
        params = p.query(group_by=group_by, **filters)
        return list(p.checked(await self._http.get("/governance/usage", params=params))["groups"])

    async def quota(self, *, actor: str | None = None, tenant: str | None = None) -> list[dict[str, Any]]:
        """Quota statuses (default: yours and your tenant's)."""
        params = p.query(actor=actor, tenant=tenant)
        return list(p.checked(await self._http.get("/governance/quota", params=params))["statuses"])

    async def prices(self, model: str | None = None) -> list[dict[str, Any]]:
        """Stored model prices (of ``model``), by model then start."""
        return list(p.checked(await self._http.get("/pricing", params=p.query(model=model)))["prices"])

    async def set_price(self, model: str, *, input_per_mtok: float, output_per_mtok: float,
                        cached_input_per_mtok: float | None = None,
                        effective_from: int | str | None = None) -> dict[str, Any]:
        """Store ``model``'s price (operator only); returns the stored price."""
        body = p.price_body(input_per_mtok, output_per_mtok, cached_input_per_mtok, effective_from)
        return dict(p.checked(await self._http.put(p.price_path(model), json=body)))

    async def delete_price(self, model: str, effective_from: int | str) -> bool:
        """Remove ``model``'s price starting at ``effective_from`` (operator only); False if none did."""
        try:
            p.checked(await self._http.delete(p.price_path(model), params={"effective_from": effective_from}))
        except ApiNotFoundError:
            return False
        return True

    async def subscribe(
        self, thread_key: str, *, last_event_id: int | None = None, max_retries: int | None = None,
        read_timeout: float = 60.0,
    ) -> AsyncIterator[StreamEvent]:
        """The thread's live events; reconnects with ``Last-Event-ID`` (see ``Client.subscribe``)."""
        cursor, failures, parser = last_event_id, 0, None
        timeout = httpx.Timeout(10.0, read=read_timeout)
        while True:
            headers = dict(p.STREAM_HEADERS)
            if cursor is not None:
                headers["Last-Event-ID"] = str(cursor)
            try:
                async with self._http.stream("GET", p.thread_path(thread_key, "/events"), headers=headers,
                                             timeout=timeout) as response:
                    if response.status_code != 200:
                        error = p.stream_error(response, await response.aread())
                        if not p.retryable(response.status_code):
                            raise error
                    else:
                        parser = SseParser()
                        async for line in response.aiter_lines():
                            event = p.event_of(parser, line)
                            if event is None:
                                continue
                            failures = 0
                            if event.id is not None:
                                cursor = event.id
                            yield event
            except httpx.TransportError:
                pass
            failures += 1
            if max_retries is not None and failures > max_retries:
                raise ConnectionError(f"the stream of thread {thread_key!r} failed {failures} times in a row")
            await asyncio.sleep(p.backoff_s(parser, failures))

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: Any) -> None:
        await self.aclose()
