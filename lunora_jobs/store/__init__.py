"""Durable agent state: the ``AgentStore`` protocol (``base``), ``SqlStore`` (``sql/``: Postgres,
MySQL/MariaDB, SQLite) and ``InMemoryStore`` (``memory/``), its single-process twin; action proposals
(``proposals/``); the tables (``schema``), provisioning (``ddl``) and the migrations (``migrations/``).

Example::

    from lunora_jobs.store import create_store, NewMessage
    store = create_store("sqlite:///./.lunora/lunora.db")
    thread = store.ensure_thread("support:42", owner="user-7")
    store.append_message(thread.id, NewMessage(key="run-1:user:0", role="user", content="hi"))
"""

from lunora_jobs.store._codec import Clock, wall_clock
from lunora_jobs.store.base import MAX_IDENTITY, AgentStore
from lunora_jobs.store.ddl import ensure_tables
from lunora_jobs.store.memory import InMemoryProposalStore, InMemoryStore
from lunora_jobs.store.proposals import ActionProposalStore
from lunora_jobs.store.records import (
    JSON,
    MessageRecord,
    ModelUsage,
    NewMessage,
    NewRun,
    OutboxEntry,
    RunListing,
    RunOpening,
    RunRecord,
    ScheduleRecord,
    StepClaim,
    StepCompletion,
    StepRecord,
    ThreadRecord,
    ToolCallRecord,
    UsageEntry,
    UsageTotals,
)
from lunora_jobs.store.sql import SqlProposalStore, SqlStore, create_engine, create_store

__all__ = [
    "JSON",
    "MAX_IDENTITY",
    "ActionProposalStore",
    "AgentStore",
    "Clock",
    "InMemoryProposalStore",
    "InMemoryStore",
    "MessageRecord",
    "ModelUsage",
    "NewMessage",
    "NewRun",
    "OutboxEntry",
    "RunListing",
    "RunOpening",
    "RunRecord",
    "ScheduleRecord",
    "SqlProposalStore",
    "SqlStore",
    "StepClaim",
    "StepCompletion",
    "StepRecord",
    "ThreadRecord",
    "ToolCallRecord",
    "UsageEntry",
    "UsageTotals",
    "create_engine",
    "create_store",
    "ensure_tables",
    "wall_clock",
]
