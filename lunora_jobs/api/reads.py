"""The reads the API needs beyond the runtime's: a page of messages after a seq."""

from __future__ import annotations

from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import MessageRecord


def messages_after(store: AgentStore, thread_id: str, after_seq: int, limit: int) -> list[MessageRecord]:
    """Up to ``limit`` messages with ``seq > after_seq``, by seq."""
    return [m for m in store.list_messages(thread_id) if m.seq > after_seq][:limit]
