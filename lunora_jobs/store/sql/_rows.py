"""Rows to records (decode JSON columns, coerce the numeric columns drivers return) and back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lunora_jobs.store._codec import check_identity, dump, load, new_id
from lunora_jobs.store.records import (
    MessageRecord,
    NewMessage,
    RunRecord,
    ScheduleRecord,
    StepRecord,
    ThreadRecord,
    ToolCallRecord,
    UsageEntry,
)


def thread_record(row: Any) -> ThreadRecord:
    """An ``agent_threads`` row as a record."""
    m = row._mapping
    return ThreadRecord(
        id=m["id"],
        key=m["key"],
        owner=m["owner"],
        title=m["title"],
        status=m["status"],
        state=load(m["state"]),
        model=m["model"],
        agent=m["agent"],
        active_run_id=m["active_run_id"],
        input_tokens=int(m["input_tokens"]),
        output_tokens=int(m["output_tokens"]),
        created_at=int(m["created_at"]),
        updated_at=int(m["updated_at"]),
    )


def message_record(row: Any) -> MessageRecord:
    """An ``agent_messages`` row as a record."""
    m = row._mapping
    return MessageRecord(
        id=m["id"],
        thread_id=m["thread_id"],
        key=m["key"],
        role=m["role"],
        content=m["content"],
        run_id=m["run_id"],
        tool_calls=load(m["tool_calls"]),
        tool_call_id=m["tool_call_id"],
        name=m["name"],
        metadata=load(m["metadata"]),
        seq=int(m["seq"]),
        created_at=int(m["created_at"]),
    )


def run_record(row: Any) -> RunRecord:
    """An ``agent_runs`` row as a record."""
    m = row._mapping
    return RunRecord(
        id=m["id"],
        thread_id=m["thread_id"],
        agent=m["agent"],
        owner=m["owner"],
        status=m["status"],
        input=load(m["input"]),
        result=load(m["result"]),
        error=m["error"],
        stopped=m["stopped"],
        turns=int(m["turns"]),
        input_tokens=int(m["input_tokens"]),
        output_tokens=int(m["output_tokens"]),
        created_at=int(m["created_at"]),
        updated_at=int(m["updated_at"]),
        tenant=m.get("tenant"),
    )


def step_record(row: Any) -> StepRecord:
    """An ``agent_steps`` row as a record."""
    m = row._mapping
    return StepRecord(
        run_id=m["run_id"],
        name=m["name"],
        status=m["status"],
        result=load(m["result"]),
        error=m["error"],
        attempt=int(m["attempt"]),
        generation=int(m["generation"]),
        lease_owner=m["lease_owner"],
        lease_expires_at=int(m["lease_expires_at"]),
        created_at=int(m["created_at"]),
        updated_at=int(m["updated_at"]),
    )


def tool_call_record(row: Any) -> ToolCallRecord:
    """An ``agent_tool_calls`` row as a record."""
    m = row._mapping
    decided = m["decided_at"]
    return ToolCallRecord(
        id=m["id"],
        run_id=m["run_id"],
        thread_id=m["thread_id"],
        name=m["name"],
        input=load(m["input"]),
        output=load(m["output"]),
        status=m["status"],
        decision=m["decision"],
        decided_by=m["decided_by"],
        decided_at=None if decided is None else int(decided),
        created_at=int(m["created_at"]),
        updated_at=int(m["updated_at"]),
    )


def schedule_record(row: Any) -> ScheduleRecord:
    """An ``agent_schedules`` row as a record."""
    m = row._mapping
    claimed, due, fired = m["claimed_at"], m["due_at"], m["fired_at"]
    return ScheduleRecord(
        id=m["id"],
        agent=m["agent"],
        run_at=int(m["run_at"]),
        payload=load(m["payload"]),
        status=m["status"],
        claimed_by=m["claimed_by"],
        claimed_at=None if claimed is None else int(claimed),
        created_at=int(m["created_at"]),
        kind=m["kind"],
        due_at=None if due is None else int(due),
        attempts=int(m["attempts"]),
        run_id=m["run_id"],
        fired_at=None if fired is None else int(fired),
        last_error=m["last_error"],
    )


def usage_row(entry: UsageEntry, now: int, thread_id: str | None = None) -> dict[str, Any]:
    """A token-usage ledger row (``thread_id`` fills in a missing one)."""
    for name, value in (("actor", entry.actor), ("tenant", entry.tenant), ("agent", entry.agent),
                        ("model", entry.model)):
        check_identity(name, value)
    return {
        "actor": entry.actor,
        "tenant": entry.tenant,
        "agent": entry.agent,
        "model": entry.model,
        "thread_id": entry.thread_id or thread_id,
        "run_id": entry.run_id,
        "step": entry.step,
        "input_tokens": entry.input_tokens,
        "output_tokens": entry.output_tokens,
        "cache_read_tokens": entry.cache_read_tokens,
        "cache_write_tokens": entry.cache_write_tokens,
        "cost_usd": entry.cost_usd,
        "cost_source": entry.cost_source,
        "created_at": entry.created_at if entry.created_at is not None else now,
    }


def message_rows(
    thread_id: str, batch: Sequence[NewMessage], first_seq: int, now: int
) -> list[dict[str, Any]]:
    """Rows for ``batch`` with consecutive seqs from ``first_seq``."""
    return [
        {
            "id": new_id(),
            "thread_id": thread_id,
            "key": m.key,
            "seq": first_seq + i,
            "role": m.role,
            "content": m.content,
            "run_id": m.run_id,
            "tool_calls": dump(m.tool_calls),
            "tool_call_id": m.tool_call_id,
            "name": m.name,
            "metadata": dump(m.metadata),
            "created_at": now,
        }
        for i, m in enumerate(batch)
    ]
