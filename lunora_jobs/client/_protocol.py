"""What the sync and async clients share: paths, request bodies, response decoding, reconnect pacing."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from lunora_jobs.client.errors import api_error
from lunora_jobs.client.sse import SseParser
from lunora_jobs.client.types import Message, PendingApproval, Run, StreamEvent

MAX_BACKOFF_S = 10.0
STREAM_HEADERS = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}


def thread_path(key: str, tail: str = "") -> str:
    """``/threads/<key><tail>`` with the key percent-encoded (keys may hold ``/`` or spaces)."""
    return f"/threads/{quote(key, safe='')}{tail}"


def decision_path(key: str, call_id: str, verb: str, kind: str = "approvals") -> str:
    """``/threads/<key>/<approvals|proposals>/<id>/<approve|reject>``."""
    return thread_path(key, f"/{kind}/{quote(call_id, safe='')}/{verb}")


def query(**params: Any) -> dict[str, Any]:
    """The query parameters that are set."""
    return {name: value for name, value in params.items() if value is not None}


def price_path(model: str) -> str:
    """``/pricing/<model>`` with the model percent-encoded (names may hold ``/`` or ``:``)."""
    return f"/pricing/{quote(model, safe='')}"


def price_body(input_per_mtok: float, output_per_mtok: float, cached_input_per_mtok: float | None,
               effective_from: int | str | None) -> dict[str, Any]:
    """The body of ``PUT /pricing/<model>``."""
    return {"input": input_per_mtok, "cached_input": cached_input_per_mtok, "output": output_per_mtok,
            "effective_from": effective_from}


def run_path(run_id: str, tail: str = "") -> str:
    """``/runs/<id><tail>``."""
    return f"/runs/{quote(run_id, safe='')}{tail}"


def start_body(agent: str, input: Any, thread_key: str | None, title: str | None) -> dict[str, Any]:
    """The body of ``POST /runs``."""
    body: dict[str, Any] = {"agent": agent, "input": input}
    if thread_key is not None:
        body["thread_key"] = thread_key
    if title is not None:
        body["title"] = title
    return body


def auth_headers(token: str | None) -> dict[str, str]:
    """The bearer header (none without a token)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def checked(response: httpx.Response) -> Any:
    """The decoded JSON body, or the named ``ApiError`` for an error status."""
    if response.status_code >= 400:
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        raise api_error(response.status_code, body)
    if response.status_code == 204 or not response.content:
        return None
    return response.json()


def stream_error(response: httpx.Response, body: bytes) -> Exception:
    """The error for a stream that did not open (after its body was read)."""
    try:
        import json

        return api_error(response.status_code, json.loads(body))
    except ValueError:
        return api_error(response.status_code, body.decode(errors="replace"))


def retryable(status: int) -> bool:
    """Whether a stream that failed to open with ``status`` is worth reconnecting to."""
    return status in (408, 425, 429) or status >= 500


def backoff_s(parser: SseParser | None, failures: int) -> float:
    """Wait before reconnect number ``failures``: the server's ``retry:``, doubled per failure, capped."""
    base = (parser.retry_ms if parser is not None and parser.retry_ms is not None else 1000) / 1000
    return float(min(base * (2 ** max(failures - 1, 0)), MAX_BACKOFF_S))


def runs(data: Any) -> Run:
    """A run body."""
    return Run.from_json(data)


def messages(data: Any) -> tuple[list[Message], int | None]:
    """A message page and its continuation."""
    return [Message.from_json(m) for m in data["messages"]], data["next_after"]


def approvals(data: Any) -> list[PendingApproval]:
    """The pending approvals body."""
    return [PendingApproval(**p) for p in data["pending"]]


def event_of(parser: SseParser, line: str) -> StreamEvent | None:
    """Feed one line; the stream event it completes, if any."""
    found = parser.feed(line)
    return None if found is None else StreamEvent.from_wire(found.event, found.data, found.id)
