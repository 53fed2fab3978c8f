"""``Client``: the HTTP API from blocking Python code.

Example::

    from lunora_jobs.client import Client
    with Client("http://127.0.0.1:8000", token="s3cret") as client:
        run = client.run("support", "Refund my order", thread_key="t1")
        for event in client.subscribe("t1"):           # reconnects with Last-Event-ID by itself
            if event.type == "status" and event.data["status"] in ("completed", "failed"):
                break
        client.wait(run.id).text
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx

from lunora_jobs.client import _protocol as p
from lunora_jobs.client.errors import ApiNotFoundError
from lunora_jobs.client.sse import SseParser
from lunora_jobs.client.types import Message, PendingApproval, Run, StreamEvent


class Client:
    """A blocking client (httpx). ``token`` is sent as ``Authorization: Bearer``."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 30.0,
                 http: httpx.Client | None = None) -> None:
        self._http = http or httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout,
                                          headers=p.auth_headers(token))

    # -- runs ---------------------------------------------------------------------------------------
    def run(self, agent: str, input: Any, *, thread_key: str | None = None, title: str | None = None,
            idempotency_key: str | None = None) -> Run:
        """Start a run (or continue ``thread_key``); returns its id, thread and status."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return p.runs(p.checked(self._http.post(
            "/runs", json=p.start_body(agent, input, thread_key, title), headers=headers)))

    def get_run(self, run_id: str) -> Run:
        """The run's status and, once over, its result."""
        return p.runs(p.checked(self._http.get(p.run_path(run_id))))

    def status(self, run_id: str) -> str:
        """The run's status."""
        return self.get_run(run_id).status

    def wait(self, run_id: str, timeout: float = 60.0, poll_s: float = 0.2) -> Run:
        """Poll until the run is over; ``TimeoutError`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.get_run(run_id)
            if run.done:
                return run
            if time.monotonic() >= deadline:
                raise TimeoutError(f"run {run_id!r} still {run.status} after {timeout}s; wait longer.")
            time.sleep(poll_s)

    def cancel(self, run_id: str) -> bool:
        """Cancel the run; False when it had already ended."""
        return bool(p.checked(self._http.post(p.run_path(run_id, "/cancel")))["cancelled"])

    def retry(self, run_id: str) -> list[str]:
        """Resume a failed run from the step it failed at; the steps given fresh attempts."""
        return list(p.checked(self._http.post(p.run_path(run_id, "/retry")))["steps"])

    # -- threads ------------------------------------------------------------------------------------
    def thread(self, thread_key: str) -> dict[str, Any]:
        """The thread (status, active run, state, usage)."""
        data: dict[str, Any] = p.checked(self._http.get(p.thread_path(thread_key)))
        return data

    def messages(self, thread_key: str, *, after: int = 0) -> list[Message]:
        """The transcript after ``after`` (every page), oldest first."""
        out: list[Message] = []
        cursor: int | None = after
        while cursor is not None:
            page, cursor = p.messages(p.checked(self._http.get(
                p.thread_path(thread_key, "/messages"), params={"after": cursor, "limit": 500})))
            out += page
        return out

    def state(self, thread_key: str) -> Any:
        """The thread's synced state."""
        return p.checked(self._http.get(p.thread_path(thread_key, "/state")))["state"]

    def approvals(self, thread_key: str) -> list[PendingApproval]:
        """The tool calls waiting for a decision."""
        return p.approvals(p.checked(self._http.get(p.thread_path(thread_key, "/approvals"))))

    def approve(self, thread_key: str, tool_call_id: str, *, reason: str | None = None) -> str:
        """Approve a pending call: ``applied`` or ``unchanged``."""
        return self._decide(thread_key, tool_call_id, "approve", reason)

    def reject(self, thread_key: str, tool_call_id: str, *, reason: str | None = None) -> str:
        """Reject a pending call (the model is told ``reason``): ``applied`` or ``unchanged``."""
        return self._decide(thread_key, tool_call_id, "reject", reason)

    def _decide(self, thread_key: str, call_id: str, verb: str, reason: str | None,
                kind: str = "approvals") -> str:
        path = p.decision_path(thread_key, call_id, verb, kind)
        return str(p.checked(self._http.post(path, json={"reason": reason}))["result"])

    # -- action proposals and governance ------------------------------------------------------------
    def proposals(self, thread_key: str, *, decision: str | None = None) -> list[dict[str, Any]]:
        """The thread's action proposals you may act on (independent mode), oldest first."""
        path = p.thread_path(thread_key, "/proposals")
        return list(p.checked(self._http.get(path, params=p.query(decision=decision)))["proposals"])

    def approve_proposal(self, thread_key: str, proposal_id: str, *, reason: str | None = None) -> str:
        """Approve an action proposal (a worker runs it once): ``applied`` or ``unchanged``."""
        return self._decide(thread_key, proposal_id, "approve", reason, "proposals")

    def reject_proposal(self, thread_key: str, proposal_id: str, *, reason: str | None = None) -> str:
        """Reject an action proposal (it never runs): ``applied`` or ``unchanged``."""
        return self._decide(thread_key, proposal_id, "reject", reason, "proposals")

    def usage(self, group_by: str | None = None, **filters: str | None) -> list[dict[str, Any]]:
        """Usage groups (``since``/``until`` ISO date-times, ``actor``, ``tenant``, ``agent``, ``model``),
        narrowed to what your identity may read."""
        params = p.query(group_by=group_by, **filters)
        return list(p.checked(self._http.get("/governance/usage", params=params))["groups"])

    def quota(self, *, actor: str | None = None, tenant: str | None = None) -> list[dict[str, Any]]:
        """Quota statuses (default: yours and your tenant's)."""
        params = p.query(actor=actor, tenant=tenant)
        return list(p.checked(self._http.get("/governance/quota", params=params))["statuses"])

    # -- model prices -------------------------------------------------------------------------------
    def prices(self, model: str | None = None) -> list[dict[str, Any]]:
        """Stored model prices (of ``model``), by model then start: USD per 1M tokens, starts in epoch ms."""
        return list(p.checked(self._http.get("/pricing", params=p.query(model=model)))["prices"])

    def set_price(self, model: str, *, input_per_mtok: float, output_per_mtok: float,
                  cached_input_per_mtok: float | None = None,
                  effective_from: int | str | None = None) -> dict[str, Any]:
        """Store ``model``'s price from ``effective_from`` (epoch ms or ISO date; default now); the
        operator only (``ApiForbiddenError`` otherwise). Returns the stored price."""
        body = p.price_body(input_per_mtok, output_per_mtok, cached_input_per_mtok, effective_from)
        return dict(p.checked(self._http.put(p.price_path(model), json=body)))

    def delete_price(self, model: str, effective_from: int | str) -> bool:
        """Remove ``model``'s price starting at ``effective_from`` (operator only); False if none did."""
        try:
            p.checked(self._http.delete(p.price_path(model), params={"effective_from": effective_from}))
        except ApiNotFoundError:
            return False
        return True

    # -- the live stream ----------------------------------------------------------------------------
    def subscribe(self, thread_key: str, *, last_event_id: int | None = None,
                  max_retries: int | None = None, read_timeout: float = 60.0) -> Iterator[StreamEvent]:
        """The thread's live events, forever: on a dropped connection it reconnects with
        ``Last-Event-ID`` (the last message seq seen), so no message is missed or repeated. Stops by
        raising after ``max_retries`` consecutive failed reconnects (None: never), or on 401/404."""
        cursor, failures, parser = last_event_id, 0, None
        timeout = httpx.Timeout(10.0, read=read_timeout)
        while True:
            headers = dict(p.STREAM_HEADERS)
            if cursor is not None:
                headers["Last-Event-ID"] = str(cursor)
            try:
                with self._http.stream("GET", p.thread_path(thread_key, "/events"), headers=headers,
                                       timeout=timeout) as response:
                    if response.status_code != 200:
                        error = p.stream_error(response, response.read())
                        if not p.retryable(response.status_code):
                            raise error
                    else:
                        parser = SseParser()
                        for line in response.iter_lines():
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
            time.sleep(p.backoff_s(parser, failures))

    # -- lifecycle ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()
