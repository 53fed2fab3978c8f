"""Store records → response bodies."""

from __future__ import annotations

from lunora_jobs.api.schemas import ApprovalOut, MessageOut, RunOut, ThreadOut, UsageOut
from lunora_jobs.engine.approvals import PendingApproval
from lunora_jobs.runtime.result import run_result
from lunora_jobs.store.records import MessageRecord, RunRecord, ThreadRecord


def run_view(run: RunRecord, thread_key: str) -> RunOut:
    """A run and its result (raw JSON output: the API does not rebuild pydantic instances)."""
    result = run_result(run)
    return RunOut(
        id=run.id, agent=run.agent, thread_key=thread_key, status=run.status, stopped=run.stopped,
        turns=run.turns, usage=UsageOut(input_tokens=run.input_tokens, output_tokens=run.output_tokens),
        text=result.text, output=result.output, error=result.error, created_at=run.created_at,
        updated_at=run.updated_at,
    )


def thread_view(thread: ThreadRecord) -> ThreadOut:
    """A thread."""
    return ThreadOut(
        key=thread.key, title=thread.title, status=thread.status, agent=thread.agent,
        active_run_id=thread.active_run_id, state=thread.state,
        usage=UsageOut(input_tokens=thread.input_tokens, output_tokens=thread.output_tokens),
        created_at=thread.created_at, updated_at=thread.updated_at,
    )


def message_view(message: MessageRecord) -> MessageOut:
    """A message."""
    return MessageOut(
        seq=message.seq, role=message.role, content=message.content, run_id=message.run_id,
        tool_calls=message.tool_calls, tool_call_id=message.tool_call_id, name=message.name,
        metadata=message.metadata, created_at=message.created_at,
    )


def approval_view(pending: PendingApproval) -> ApprovalOut:
    """A pending approval."""
    return ApprovalOut(run_id=pending.run_id, tool_call_id=pending.tool_call_id,
                       tool_name=pending.tool_name, input=pending.input)
