"""The store protocol the engine calls. ``SqlStore`` and ``InMemoryStore`` both implement it.

All timestamps are epoch milliseconds from the store's injectable ``clock``. Identity fields
(owner, actor, keys) are at most 255 characters; longer input raises ``IdentityTooLongError``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol, runtime_checkable

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

MAX_IDENTITY = 255

SCHEDULE_LEASE_MS = 60_000
"""How long a schedule claim holds before another claimer may take the row over (a claimer killed
between its claim and its fire record): far longer than starting a run takes."""


@runtime_checkable
class AgentStore(Protocol):
    """Durable state of agents: threads, messages, runs, the step ledger, usage."""

    # -- schema -----------------------------------------------------------------------------
    def ensure_tables(self) -> None:
        """Create whatever is missing; only reads against a current schema. Safe to race."""

    # -- threads ----------------------------------------------------------------------------
    def ensure_thread(
        self,
        key: str,
        *,
        owner: str | None = None,
        title: str | None = None,
        agent: str | None = None,
        model: str | None = None,
        initial_state: JSON = None,
    ) -> ThreadRecord:
        """Get the thread for ``key`` or create it. ``initial_state`` seeds only on creation.

        Raises ``ConflictError`` when the thread exists with a different owner (owners are immutable).
        """

    def get_thread(self, key: str) -> ThreadRecord | None:
        """The thread for ``key``, or None."""

    def get_thread_by_id(self, thread_id: str) -> ThreadRecord | None:
        """The thread with this id, or None."""

    def patch_thread(self, thread_id: str, **fields: Any) -> None:
        """Update any of: status, title, state, model, agent. Bumps ``updated_at``."""

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread; messages, tool calls, usage, runs and steps go with it (cascade)."""

    def model_for_thread(self, thread_id: str) -> str | None:
        """The model pinned on the thread (one column read)."""

    def acquire_thread(self, thread_id: str, run_id: str) -> bool:
        """Make ``run_id`` the thread's active run if none is (or it already is). Race-free."""

    def release_thread(self, thread_id: str, run_id: str) -> bool:
        """Clear the active run if it is ``run_id``."""

    # -- messages ---------------------------------------------------------------------------
    def append_message(self, thread_id: str, message: NewMessage) -> MessageRecord:
        """Append idempotently on ``message.key``; assigns the next per-thread ``seq``."""

    def append_messages(self, thread_id: str, messages: Sequence[NewMessage]) -> list[MessageRecord]:
        """Append several in one transaction, in order, each idempotent on its key."""

    def list_messages(self, thread_id: str) -> list[MessageRecord]:
        """The whole transcript ordered by ``seq``."""

    def load_thread_for_turn(self, thread_id: str, message_limit: int | None = None) -> list[MessageRecord]:
        """The newest ``message_limit`` messages (all when None), oldest first."""

    def has_assistant_message(self, thread_id: str) -> bool:
        """Whether any assistant message exists on the thread (one-row existence check)."""

    def fork_thread(
        self, thread_id: str, new_key: str, *, upto_seq: int | None = None, owner: str | None = None
    ) -> ThreadRecord:
        """Copy messages (``seq <= upto_seq``, or all) under fresh ids to a new thread. One transaction."""

    def truncate_from(self, thread_id: str, seq: int) -> int:
        """Delete messages with ``seq >= seq`` and their tool calls. One transaction. Returns count."""

    # -- runs -------------------------------------------------------------------------------
    def create_run(self, run: NewRun, opening: RunOpening | None = None) -> RunRecord:
        """Insert a run; idempotent on ``run.id`` (returns the existing one). ``opening``: its user
        message and its thread's status, its first dispatches (the outbox) or its place in the
        thread's queue, written in the same transaction (a start is all or nothing)."""

    def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None."""

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Update any of: status, result, error, stopped, turns, input_tokens, output_tokens."""

    def list_runs(
        self, *, thread_id: str | None = None, status: str | None = None, limit: int | None = None
    ) -> list[RunRecord]:
        """Runs filtered by thread and/or status, oldest first; at most ``limit`` when given (the sweep
        asks for one bounded batch instead of every running run)."""

    def reopen_run(self, run_id: str, *, input: JSON, step_names: Sequence[str]) -> bool:
        """A failed run runs again (``app.runs.retry``), in one transaction: the run moves from
        ``failed`` to ``running`` (error, stopped and result cleared, its stored ``input`` replaced)
        and its thread's status to ``running``; each ledger row of ``step_names`` gets fresh attempts
        (``running``, attempt 0, a lapsed lease and a new generation, so the next claim takes it).
        False (nothing written) when the run is not failed."""

    # -- the step ledger --------------------------------------------------------------------
    def claim_step(
        self, run_id: str, name: str, *, owner: str, lease_ms: int, max_attempts: int = 5
    ) -> StepClaim:
        """Claim a step: insert it, or take over an expired lease (``attempt += 1``, new generation)."""

    def complete_step(self, run_id: str, name: str, generation: int, completion: StepCompletion) -> bool:
        """Record the result with its messages/usage/patches in one transaction.

        Returns False (and writes nothing) when ``generation`` is no longer current, or when the
        run was cancelled (a cancelled run applies no further step result).
        """

    def fail_step(
        self, run_id: str, name: str, generation: int, error: str, *, terminal: bool = False,
        retry_at: int = 0,
    ) -> bool:
        """Record an error. Not terminal: release the lease so a retry can claim — at ``retry_at``
        (epoch ms; 0: at once), the backoff held in the ledger. Fenced like complete."""

    def renew_lease(self, run_id: str, name: str, generation: int, lease_ms: int) -> bool:
        """Extend a running step's lease to now + ``lease_ms`` (the heartbeat of a live step).

        Fenced like ``complete_step``: False (nothing written) when ``generation`` is no longer
        current or the step is not running any more."""

    def reclaim_step(
        self, run_id: str, name: str, generation: int, *, owner: str, lease_ms: int, max_attempts: int = 5
    ) -> StepClaim:
        """Take over ``owner``'s own live lease of generation ``generation`` (``attempt += 1``, new
        generation): the owner knows its earlier attempt has ended (it raised). Otherwise the same
        outcomes as ``claim_step`` (``busy`` when the lease moved on or belongs to someone else)."""

    # -- the start's outbox and the agents live workers declare (engine/outbox.py, registry.py) ---
    def due_outbox(self, before: int, *, agents: Sequence[str], limit: int) -> list[OutboxEntry]:
        """Outbox rows of ``agents`` created at or before ``before``, oldest first, at most ``limit``."""

    def clear_outbox(self, keys: Sequence[tuple[str, str]]) -> int:
        """Delete the outbox rows ``keys`` = (run_id, step) pairs (sent); how many were there."""

    def declare_agents(self, agents: Sequence[str]) -> None:
        """Record that a live worker serves ``agents`` now (their ``seen_at`` moves to the clock)."""

    def declared_agents(self, since: int) -> dict[str, int]:
        """Agent -> ``seen_at`` of the declarations seen at or after ``since``."""

    def undeclared_runs(self, before: int, live_since: int, *, limit: int) -> list[RunRecord]:
        """Running runs not updated since ``before`` and never claimed (no ledger row), whose agent
        no declaration names as seen since ``live_since``; stalest first, at most ``limit``."""

    # -- the sweep's reads (one indexed query each, keyset-paged, stalest first) ----------------
    def lapsed_steps(
        self, now: int, *, agents: Sequence[str], limit: int, after: tuple[int, str, str] | None = None,
    ) -> list[StepRecord]:
        """Running steps of running runs of ``agents`` whose lease lapsed (``0 < lease_expires_at <=
        now``), oldest lapse first, after ``after`` = (lease_expires_at, run_id, name)."""

    def quiet_runs(
        self, status: str, before: int, *, agents: Sequence[str], limit: int,
        after: tuple[int, str] | None = None,
    ) -> list[RunRecord]:
        """Runs of ``agents`` in ``status`` not updated since ``before``, stalest first, after
        ``after`` = (updated_at, id)."""

    def parked_runs_to_wake(
        self, before: int, *, agents: Sequence[str], limit: int, after: tuple[int, str] | None = None,
    ) -> list[RunRecord]:
        """Parked runs of ``agents`` with a decision recorded by ``before`` but not applied to the
        ledger, or quiet since ``before`` with no call awaiting approval; stalest first."""

    def get_step(self, run_id: str, name: str) -> StepRecord | None:
        """The ledger row, or None."""

    def list_steps(self, run_id: str) -> list[StepRecord]:
        """Every ledger row of the run, in creation order."""

    # -- tool calls and delayed runs ---------------------------------------------------------
    def list_threads(self, *, owner: str | None = None, limit: int = 100) -> list[ThreadRecord]:
        """Threads, most recently active first, optionally only ``owner``'s."""

    def upsert_tool_call(
        self, thread_id: str, run_id: str, call_id: str, *, name: str, input: JSON = None, **fields: Any
    ) -> ToolCallRecord:
        """Insert the call, or update ``fields`` (output, status, decision, decided_by, decided_at)."""

    def get_tool_call(self, run_id: str, call_id: str) -> ToolCallRecord | None:
        """The tool call, or None."""

    def list_tool_calls(self, run_id: str) -> list[ToolCallRecord]:
        """The run's tool calls, oldest first."""

    def add_schedule(
        self, agent: str, run_at: int, payload: JSON = None, *, id: str | None = None, kind: str = "once"
    ) -> ScheduleRecord:
        """Queue a delayed run or a cron entry's first fire at ``run_at`` (idempotent on ``id``)."""

    def claim_due_schedules(
        self, now: int, limit: int, claimer: str, *, lease_ms: int = SCHEDULE_LEASE_MS
    ) -> list[ScheduleRecord]:
        """Claim up to ``limit`` schedules due at ``now`` — pending ones, and claimed ones whose lease
        expired (a claimer that died) — for ``lease_ms``; each claim goes to one caller only and
        counts an attempt."""

    def finish_schedule(
        self, id: str, *, claimed_by: str, claimed_at: int, status: str, run_id: str | None = None,
        next_due: int | None = None, error: str | None = None,
    ) -> bool:
        """Record a fire (or a failure) of a schedule still held by this claim (``claimed_by``,
        ``claimed_at``); ``next_due`` makes it pending again at that time (cron). False when the
        claim was lost (its lease expired and another claimer took it)."""

    def cancel_schedule(self, id: str) -> bool:
        """Cancel a pending schedule; False when it is not pending (fired, claimed, already cancelled)."""

    def reset_schedule(
        self, id: str, *, due_at: int, payload: JSON, from_statuses: Collection[str]
    ) -> bool:
        """Make the schedule pending at ``due_at`` with ``payload`` (a cron entry whose declaration
        changed), only while its status is in ``from_statuses``."""

    def get_schedule(self, id: str) -> ScheduleRecord | None:
        """The schedule, or None."""

    def list_schedules(
        self, *, status: str | None = None, agent: str | None = None, limit: int = 100
    ) -> list[ScheduleRecord]:
        """Schedules by due time (``run_at``, then id), optionally one status's or one agent's."""

    # -- usage ------------------------------------------------------------------------------
    def record_usage(self, entry: UsageEntry) -> None:
        """Append to the token-usage ledger."""

    def quota_today(self, actor: str) -> int:
        """Input + output tokens of ``actor`` over the current UTC day (one SUM in the database)."""

    def usage_between(self, actor: str, start_ms: int, end_ms: int) -> UsageTotals:
        """Sums over ``start_ms <= created_at < end_ms`` (one SUM in the database)."""

    # -- approvals, cancellation, run concurrency -----------------------------------------------
    def transition_run(self, run_id: str, from_statuses: Collection[str], **fields: Any) -> bool:
        """``update_run`` only while the run's status is in ``from_statuses``; True if it applied."""

    def transition_run_and_thread(
        self, run_id: str, from_statuses: Collection[str], *, thread_status: str, release: bool = False,
        **fields: Any,
    ) -> bool:
        """``transition_run`` that sets the run's thread's status to ``thread_status`` in the same
        statement (no reader ever sees the run moved and its thread not, or the reverse); ``release``
        also frees the thread's slot, and then the thread changes only while this run holds it."""

    def decide_tool_call(
        self, run_id: str, call_id: str, *, decision: str, decided_by: str | None = None
    ) -> ToolCallRecord:
        """Record ``approved``/``rejected`` on a call awaiting approval unless already decided.

        Returns the call with the first decision ever recorded; ``NotFoundError`` if no such call.
        """

    def enqueue_run(self, thread_id: str, run_id: str) -> None:
        """Append ``run_id`` to the thread's durable FIFO (idempotent)."""

    def queued_runs(self, thread_id: str, limit: int = 100) -> list[str]:
        """The thread's queued run ids in arrival order."""

    def dequeue_run(self, thread_id: str, run_id: str) -> bool:
        """Remove ``run_id`` from the queue; True for the one caller that removed it."""

    def queued_threads(self, limit: int = 100) -> list[str]:
        """Ids of threads with at least one queued run."""

    # -- console reads (sql/_console.py / memory/_console.py) ---------------------------------
    def list_messages_after(self, thread_id: str, after_seq: int, limit: int) -> list[MessageRecord]:
        """Up to ``limit`` messages with ``seq > after_seq``, by seq (one index range read)."""

    def page_runs(
        self, *, owner: str | None = None, status: str | None = None, agent: str | None = None,
        thread_id: str | None = None, before: tuple[int, str] | None = None, limit: int = 50,
    ) -> list[RunListing]:
        """Runs newest first (``created_at``, then ``id``, descending), filtered by any of owner (None:
        every owner's), status, agent and thread; ``before`` is the ``(created_at, id)`` of the last
        row of the previous page (keyset pagination: each page is one index range read)."""

    def usage_by_model(self, run_ids: Sequence[str]) -> list[ModelUsage]:
        """Token usage of each of ``run_ids`` per model, from the usage ledger (one grouped read)."""

    def erase_thread(self, key: str) -> dict[str, int] | None:
        """Delete the thread ``key`` and every row of it in every agent table (messages, runs, the step
        ledger, tool calls, proposals, usage, the run queue, inbound dedupe rows, episodes, delayed runs
        naming it); rows deleted per table, or None when there is no such thread."""

    def purge_ledger(self, before_ms: int, limit: int, statuses: Collection[str]) -> int:
        """Delete at most ``limit`` step-ledger rows of runs in ``statuses`` (and the rows themselves)
        last updated before ``before_ms``; the number deleted (less than ``limit``: nothing older left)."""
