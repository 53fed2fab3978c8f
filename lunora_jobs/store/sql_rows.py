"""Rows to records: decode JSON columns and coerce the numeric columns drivers return."""

from __future__ import annotations

from typing import Any

from lunora_jobs.store.codec import load
from lunora_jobs.store.records import MessageRecord, RunRecord, StepRecord, ThreadRecord


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
