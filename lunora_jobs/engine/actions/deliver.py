"""Delivering a proposal's outcome to its thread: one message per proposal, keyed by its id.

The key makes delivery idempotent: a worker that executed, delivered and died before settling is
followed by another that executes again (the tool dedupes on the idempotency key) and delivers
under the same key, which the store ignores. The role is ``system``: the outcome is a fact the
application reports, not words of the user, and the next turn's prompt carries it.
"""

from __future__ import annotations

import json
from typing import Any

from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.proposals import ActionProposal
from lunora_jobs.store.records import MessageRecord, NewMessage

OUTCOME_KIND = "action_outcome"
"""``metadata["kind"]`` of an outcome message."""


def outcome_message_key(proposal_id: str) -> str:
    """The unique message key of a proposal's outcome."""
    return f"{proposal_id}:outcome"


def outcome_text(proposal: ActionProposal, status: str, result: Any, error: str | None,
                 reason: str | None = None) -> str:
    """What the thread (and the model's next turn) reads about the outcome."""
    head = f"Action proposal {proposal.id} ('{proposal.tool_name}')"
    if status == "succeeded":
        return f"{head} was approved and ran. Result: {_render(result)}"
    if status == "failed":
        return f"{head} was approved but failed: {error}"
    if status == "rejected":
        return f"{head} was rejected by a human reviewer" + (f": {reason}" if reason else ".")
    if status == "expired":
        return f"{head} expired before anyone decided on it; the action did not run."
    return f"{head} {status}."


def deliver_outcome(
    store: AgentStore, proposal: ActionProposal, status: str, *, result: Any = None,
    error: str | None = None, reason: str | None = None,
) -> MessageRecord:
    """Append the outcome message to the proposal's thread (a repeat returns the stored one)."""
    message = NewMessage(
        key=outcome_message_key(proposal.id), role="system",
        content=outcome_text(proposal, status, result, error, reason), run_id=proposal.run_id,
        metadata={"kind": OUTCOME_KIND, "proposal_id": proposal.id, "status": status,
                  "tool": proposal.tool_name},
    )
    return store.append_message(proposal.thread_id, message)


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
