"""The Python client of the HTTP API (``lunora api``): sync ``Client`` and asyncio ``AsyncClient``.

Example::

    from lunora_jobs.client import Client
    client = Client("http://127.0.0.1:8000", token="s3cret")
    run = client.run("support", "charge 9000", thread_key="t1")
    for event in client.subscribe("t1"):
        if event.type == "approvals" and event.data["pending"]:
            client.approve("t1", event.data["pending"][0]["tool_call_id"])
        if event.type == "status" and event.data["status"] == "completed":
            break
"""

from lunora_jobs.client.aio import AsyncClient
from lunora_jobs.client.errors import (
    ApiConflictError,
    ApiError,
    ApiForbiddenError,
    ApiNotFoundError,
    ApiUnauthorizedError,
    ApiValidationError,
)
from lunora_jobs.client.sse import SseEvent, SseParser
from lunora_jobs.client.sync import Client
from lunora_jobs.client.types import Message, PendingApproval, Run, StreamEvent

__all__ = [
    "ApiConflictError",
    "ApiError",
    "ApiForbiddenError",
    "ApiNotFoundError",
    "ApiUnauthorizedError",
    "ApiValidationError",
    "AsyncClient",
    "Client",
    "Message",
    "PendingApproval",
    "Run",
    "SseEvent",
    "SseParser",
    "StreamEvent",
]
