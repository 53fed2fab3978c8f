"""Plain records the store hands out and takes in. JSON payloads are already-decoded Python values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

JSON = Any
"""A JSON-serialisable value (dict, list, str, int, float, bool, None)."""

ThreadStatus = Literal["idle", "running", "awaiting_input", "completed", "failed", "cancelled"]
RunStatus = Literal["queued", "running", "awaiting_input", "completed", "failed", "cancelled"]
StepStatus = Literal["running", "completed", "failed"]
Role = Literal["system", "user", "assistant", "tool"]
ClaimOutcome = Literal["claimed", "completed", "busy", "exhausted", "failed"]


@dataclass(frozen=True, slots=True)
class ThreadRecord:
    """One conversation. ``owner`` is immutable once set; ``state`` is the synced-state scratchpad."""

    id: str
    key: str
    owner: str | None
    title: str | None
    status: str
    state: JSON
    model: str | None
    agent: str | None
    active_run_id: str | None
    input_tokens: int
    output_tokens: int
    created_at: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to append. ``key`` is ``<run_id>:<role>:<position>`` and makes the append idempotent."""

    key: str
    role: str
    content: str | None = None
    run_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """A persisted message. ``seq`` (per thread, assigned on append) orders the transcript."""

    id: str
    thread_id: str
    key: str
    role: str
    content: str | None
    run_id: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    name: str | None
    metadata: dict[str, Any] | None
    seq: int
    created_at: int


@dataclass(frozen=True, slots=True)
class NewRun:
    """A run to create."""

    id: str
    thread_id: str
    agent: str
    input: JSON
    owner: str | None = None
    status: str = "running"
    tenant: str | None = None
    """The verified tenant the run acts for (None: the app has no tenants)."""


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """A dispatch the broker has not confirmed yet (``agent_outbox``): step ``step`` of run ``run_id``,
    routed as ``kind``, for the workers of ``agent``'s app. ``created_at`` is set by the store."""

    run_id: str
    step: str
    kind: str
    agent: str
    created_at: int = 0


@dataclass(frozen=True, slots=True)
class RunOpening:
    """What ``create_run`` writes in the run's own transaction, so a start is all or nothing: the
    user ``message`` (idempotent on its key) and the thread's new ``thread_status``, the first
    dispatches (``outbox``), or the run's place in its thread's queue (``enqueue``)."""

    message: NewMessage | None = None
    thread_status: str | None = None
    outbox: tuple[OutboxEntry, ...] = ()
    enqueue: bool = False


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One execution of an agent over a thread."""

    id: str
    thread_id: str
    agent: str
    owner: str | None
    status: str
    input: JSON
    result: JSON
    error: str | None
    stopped: str | None
    turns: int
    input_tokens: int
    output_tokens: int
    created_at: int
    updated_at: int
    tenant: str | None = None
    """The tenant the run acts for (``run(tenant=...)``), recorded on its usage rows too."""


@dataclass(frozen=True, slots=True)
class StepRecord:
    """A row of the step ledger, unique on ``(run_id, name)``.

    ``generation`` is the fencing token: it moves on every claim, and a result is only recorded
    by the holder of the current generation. ``attempt`` counts claims and survives crashes.
    """

    run_id: str
    name: str
    status: str
    result: JSON
    error: str | None
    attempt: int
    generation: int
    lease_owner: str | None
    lease_expires_at: int
    created_at: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class StepClaim:
    """What ``claim_step`` decided.

    - ``claimed``: the caller holds the lease at ``step.generation`` and must do the work.
    - ``completed``: the step already finished; ``step.result`` is the memoized result (replay).
    - ``busy``: another worker holds a live lease.
    - ``exhausted``: ``max_attempts`` claims happened without a result; fail the run.
    - ``failed``: the step was failed terminally earlier.
    """

    outcome: str
    step: StepRecord


@dataclass(frozen=True, slots=True)
class UsageEntry:
    """One row of the token-usage ledger. Cache tokens are subsets of input and never re-added."""

    actor: str | None
    model: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    thread_id: str | None = None
    run_id: str | None = None
    step: str | None = None
    cost_usd: float | None = None
    created_at: int | None = None
    cost_source: str | None = None
    """"provider" | "estimate" | "none"; the store fills it (and an estimated ``cost_usd``) on write."""
    tenant: str | None = None
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Sums over a window of the usage ledger."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        """Input + output: the spend (cache tokens are already inside input)."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class StepCompletion:
    """Everything recorded with a step's result, in the same transaction.

    Batching these into one commit is what keeps the hot path to a single database round trip
    after the work is done.
    """

    result: JSON
    messages: list[NewMessage] = field(default_factory=list)
    usage: UsageEntry | None = None
    run_patch: dict[str, Any] | None = None
    thread_patch: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """A tool call of a run (``id`` is the provider's call id), with its approval decision if any."""

    id: str
    run_id: str
    thread_id: str
    name: str
    input: JSON
    output: JSON
    status: str
    decision: str | None
    decided_by: str | None
    decided_at: int | None
    created_at: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class ScheduleRecord:
    """A schedule in ``agent_schedules``: a delayed run (``kind="once"``) or a cron entry's next fire.

    ``status``: pending → claimed → fired (once) / back to pending at the next fire (cron); or
    cancelled, failed, orphaned (a cron row whose entry is no longer declared). ``run_at`` is when
    the row is next claimable (its due time; while claimed, the lease's expiry); ``due_at`` is the
    occurrence's time (epoch-ms), from which the fired run's id derives.
    """

    id: str
    agent: str
    run_at: int
    payload: JSON
    status: str
    claimed_by: str | None
    claimed_at: int | None
    created_at: int
    kind: str = "once"
    due_at: int | None = None
    attempts: int = 0
    run_id: str | None = None
    fired_at: int | None = None
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class RunListing:
    """A row of a runs list: the run without its payloads, with its thread's key (the console's runs page)."""

    id: str
    thread_key: str
    agent: str
    owner: str | None
    status: str
    stopped: str | None
    turns: int
    input_tokens: int
    output_tokens: int
    created_at: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """A run's token usage on one model, summed over its steps; ``cost_usd`` sums provider-reported
    costs (None when no step reported one)."""

    run_id: str
    model: str | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
