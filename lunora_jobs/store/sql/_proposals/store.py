"""``SqlProposalStore``: action proposals on PostgreSQL, MySQL/MariaDB and SQLite (SQLAlchemy Core).

Every state change is read → apply the shared rule (``proposals._state_machine``) → ``UPDATE ... WHERE id = ?
AND version = ?``. A writer that loses a race updates zero rows, re-reads and re-applies the rule, so
two workers can never both claim, and a decision can never overwrite another. No ``SELECT ... FOR
UPDATE`` is needed, which is what makes the same code correct on SQLite.

It is a ``SqlBase`` mixin like the other ``SqlStore`` parts (it uses ``engine``, ``clock`` and the
deadlock-retrying ``_write``), so ``SqlStore`` inherits it; it is also constructible on its own.

Example::

    store = SqlProposalStore(sa.create_engine(url), clock=None)  # provisions the tables on first use
    lease = store.claim_next_action_proposal("worker-1", lease_ms=30_000)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.errors import ConflictError, NotFoundError
from lunora_jobs.store.proposals import _state_machine as rules
from lunora_jobs.store.proposals import _validation as inputs
from lunora_jobs.store.proposals._validation import (
    check_decision,
    check_decision_filter,
    check_identity,
    check_lease_ms,
    check_limit,
    check_scope,
    check_settle_status,
)
from lunora_jobs.store.proposals.records import (
    DEFAULT_LIST_LIMIT,
    ActionProposal,
    ClaimResult,
    Decision,
    DecisionFilter,
    DecisionResult,
    NewActionProposal,
    ProposalScope,
    RenewResult,
    SettleOutcome,
    SettleStatus,
)
from lunora_jobs.store.records import JSON
from lunora_jobs.store.schema import action_proposals as T
from lunora_jobs.store.sql._proposals.discovery import SqlProposalDiscovery
from lunora_jobs.store.sql._proposals.rows import (
    column_values,
    fenced_update,
    filter_clause,
    scope_clause,
    to_stored,
)

OutcomeT = TypeVar("OutcomeT")
Rule = Callable[[rules.StoredProposal, int], tuple[OutcomeT, rules.StoredProposal | None]]

RACE_ROUNDS = 32
"""Re-reads after lost races before giving up; each lost race means another writer made progress."""

_LOST = object()
"""What a transition attempt returns when its fenced UPDATE lost the race."""


class SqlProposalStore(SqlProposalDiscovery):
    """``ActionProposalStore`` over SQLAlchemy Core: ``SqlProposalStore(engine, clock=None)``."""

    # -- reads ------------------------------------------------------------------------------
    def _proposal_row(
        self, conn: Connection, scope: ProposalScope, proposal_id: str
    ) -> rules.StoredProposal | None:
        row = conn.execute(sa.select(T).where(T.c.id == proposal_id, scope_clause(scope))).mappings().first()
        if row is None:
            return None
        stored = to_stored(row)
        # MySQL's PAD SPACE collations match 'alice' to 'alice '; the scope must match exactly.
        return stored if rules.in_scope(stored.proposal, scope) else None

    def _proposal_row_by_id(self, conn: Connection, proposal_id: str) -> rules.StoredProposal | None:
        row = conn.execute(sa.select(T).where(T.c.id == proposal_id)).mappings().first()
        return None if row is None else to_stored(row)

    def _proposal_transition(
        self, scope: ProposalScope, proposal_id: str, rule: Rule[OutcomeT]
    ) -> tuple[OutcomeT, rules.StoredProposal] | None:
        """Apply ``rule`` to the scoped proposal, re-reading after each lost race. None: not found."""
        check_scope(scope)
        check_identity("proposal_id", proposal_id)

        def attempt(conn: Connection) -> object:
            row = self._proposal_row(conn, scope, proposal_id)
            if row is None:
                return None
            outcome, written = rule(row, self.clock())
            if written is None:
                return outcome, row
            return (outcome, written) if fenced_update(conn, row, written) else _LOST

        for _ in range(RACE_ROUNDS):
            done = self._write(attempt)
            if done is not _LOST:
                return done  # type: ignore[return-value]
        raise ConflictError(
            f"action proposal {proposal_id} kept changing under {RACE_ROUNDS} attempts; retry the call"
        )

    # -- create / read ----------------------------------------------------------------------
    def create_action_proposal(self, new: NewActionProposal) -> ActionProposal:
        """Create the proposal, or return the identical one already stored (``ConflictError`` if not).

        Raises ``NotFoundError`` when ``scope.thread_id`` names no thread.
        """
        candidate = inputs.build_new(new, self.clock())
        values = column_values(rules.StoredProposal(candidate))
        try:
            self._write(lambda conn: conn.execute(T.insert().values(**values)))
            return candidate
        except sa.exc.IntegrityError:
            with self._read() as conn:
                existing = self._proposal_row_by_id(conn, candidate.id)
            if existing is None:
                raise NotFoundError(
                    f"no thread {new.scope.thread_id!r}: create the thread before proposing actions on it"
                ) from None
            if not inputs.same_snapshot(existing.proposal, candidate):
                raise inputs.snapshot_conflict(candidate.id) from None
            return existing.proposal

    def get_action_proposal(self, scope: ProposalScope, proposal_id: str) -> ActionProposal | None:
        """The proposal, or None when missing or outside ``scope``."""
        check_scope(scope)
        check_identity("proposal_id", proposal_id)
        with self._read() as conn:
            row = self._proposal_row(conn, scope, proposal_id)
        return row.proposal if row else None

    def list_action_proposals(
        self, scope: ProposalScope, *, decision: DecisionFilter | None = None, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[ActionProposal]:
        """Proposals of the scope, oldest first, at most ``limit`` (1..1000)."""
        check_scope(scope)
        check_limit(limit)
        check_decision_filter(decision)
        stmt = (
            sa.select(T)
            .where(scope_clause(scope), filter_clause(decision))
            .order_by(T.c.created_at, T.c.id)
            .limit(limit)
        )
        with self._read() as conn:
            found = [to_stored(r).proposal for r in conn.execute(stmt).mappings()]
        return [p for p in found if rules.in_scope(p, scope)]

    # -- decisions and leases ---------------------------------------------------------------
    def decide_action_proposal(
        self,
        scope: ProposalScope,
        proposal_id: str,
        decision: Decision,
        *,
        decided_by: str,
        reason: str | None = None,
    ) -> DecisionResult:
        """Record a decision once; see ``ActionProposalStore.decide_action_proposal``."""
        check_decision(decision)
        check_identity("decided_by", decided_by)
        done = self._proposal_transition(
            scope, proposal_id, lambda row, now: rules.decide(row, decision, decided_by, reason, now)
        )
        if done is None:
            return DecisionResult("not_found", None)
        return DecisionResult(done[0], done[1].proposal)

    def claim_action_proposal(
        self, scope: ProposalScope, proposal_id: str, *, worker_id: str, lease_ms: int
    ) -> ClaimResult:
        """Lease queued work or recover an expired lease of a proposal in ``scope``."""
        check_identity("worker_id", worker_id)
        check_lease_ms(lease_ms)
        done = self._proposal_transition(
            scope, proposal_id, lambda row, now: rules.claim(row, worker_id, lease_ms, now)
        )
        if done is None:
            return ClaimResult("not_found")
        outcome, row = done
        lease = rules.lease(row, worker_id) if outcome == "claimed" else None
        return ClaimResult(outcome, lease, row.proposal)

    def renew_action_proposal_lease(
        self, scope: ProposalScope, proposal_id: str, token: str, generation: int, *, lease_ms: int
    ) -> RenewResult:
        """Extend a live lease; ``lost`` once it expired or another claim moved the generation."""
        check_lease_ms(lease_ms)
        done = self._proposal_transition(
            scope, proposal_id, lambda row, now: rules.renew(row, token, generation, lease_ms, now)
        )
        if done is None:
            return RenewResult("not_found")
        outcome, row = done
        return RenewResult(outcome, row.proposal.lease_expires_at if outcome == "renewed" else None)

    def settle_action_proposal(
        self,
        scope: ProposalScope,
        proposal_id: str,
        token: str,
        generation: int,
        status: SettleStatus,
        *,
        result: JSON = None,
        error: str | None = None,
    ) -> SettleOutcome:
        """Record the execution outcome under a live lease."""
        check_settle_status(status)

        def apply(row: rules.StoredProposal, now: int) -> tuple[SettleOutcome, rules.StoredProposal | None]:
            return rules.settle(row, token, generation, status, result, error, now)

        done = self._proposal_transition(scope, proposal_id, apply)
        return "not_found" if done is None else done[0]
