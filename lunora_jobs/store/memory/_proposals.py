"""``InMemoryProposalStore``: the single-process twin of ``SqlProposalStore``, for tests and scratch apps.

Same rulebook (``proposals._state_machine``), same contract suite; one lock makes every operation
atomic, which is what the SQL store gets from version-fenced conditional UPDATEs.

Example::

    store = InMemoryProposalStore(clock=lambda: 1_000)  # any epoch-ms callable
    p = store.create_action_proposal(NewActionProposal(scope, call_id="c1", tool_name="t", input={}))
"""

from __future__ import annotations

import threading

from lunora_jobs.store._codec import Clock, wall_clock
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
    ProposalLease,
    ProposalScope,
    RenewResult,
    SettleOutcome,
    SettleStatus,
)
from lunora_jobs.store.records import JSON


class InMemoryProposalStore:
    """Thread-safe, non-durable ``ActionProposalStore``. Usable as a mixin: it needs ``clock`` only."""

    clock: Clock

    def __init__(self, *, clock: Clock | None = None) -> None:
        self.clock = clock or wall_clock

    @property
    def _proposal_state(self) -> tuple[threading.RLock, dict[str, rules.StoredProposal]]:
        # Lazily created so a host class (InMemoryStore) need not call our __init__.
        state: tuple[threading.RLock, dict[str, rules.StoredProposal]] | None = self.__dict__.get(
            "_proposals_state"
        )
        if state is None:
            state = self.__dict__.setdefault("_proposals_state", (threading.RLock(), {}))
        return state

    def _scoped_proposal(self, scope: ProposalScope, proposal_id: str) -> rules.StoredProposal | None:
        check_scope(scope)
        check_identity("proposal_id", proposal_id)
        row = self._proposal_state[1].get(proposal_id)
        return row if row is not None and rules.in_scope(row.proposal, scope) else None

    def create_action_proposal(self, new: NewActionProposal) -> ActionProposal:
        """Create the proposal, or return the identical one already stored (``ConflictError`` if not)."""
        lock, rows = self._proposal_state
        with lock:
            candidate = inputs.build_new(new, self.clock())
            existing = rows.get(candidate.id)
            if existing is not None:
                if not inputs.same_snapshot(existing.proposal, candidate):
                    raise inputs.snapshot_conflict(candidate.id)
                return existing.proposal
            rows[candidate.id] = rules.StoredProposal(candidate)
            return candidate

    def get_action_proposal(self, scope: ProposalScope, proposal_id: str) -> ActionProposal | None:
        """The proposal, or None when missing or outside ``scope``."""
        with self._proposal_state[0]:
            row = self._scoped_proposal(scope, proposal_id)
            return row.proposal if row else None

    def list_action_proposals(
        self, scope: ProposalScope, *, decision: DecisionFilter | None = None, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[ActionProposal]:
        """Proposals of the scope, oldest first, at most ``limit`` (1..1000)."""
        check_scope(scope)
        check_limit(limit)
        check_decision_filter(decision)
        lock, rows = self._proposal_state
        with lock:
            found = [
                r.proposal
                for r in rows.values()
                if rules.in_scope(r.proposal, scope) and rules.matches_filter(r.proposal, decision)
            ]
        found.sort(key=lambda p: (p.created_at, p.id))
        return found[:limit]

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
        lock, rows = self._proposal_state
        with lock:
            row = self._scoped_proposal(scope, proposal_id)
            if row is None:
                return DecisionResult("not_found", None)
            outcome, written = rules.decide(row, decision, decided_by, reason, self.clock())
            row = self._put_proposal(rows, row, written)
            return DecisionResult(outcome, row.proposal)

    def claim_action_proposal(
        self, scope: ProposalScope, proposal_id: str, *, worker_id: str, lease_ms: int
    ) -> ClaimResult:
        """Lease queued work or recover an expired lease of a proposal in ``scope``."""
        check_identity("worker_id", worker_id)
        check_lease_ms(lease_ms)
        lock, rows = self._proposal_state
        with lock:
            row = self._scoped_proposal(scope, proposal_id)
            if row is None:
                return ClaimResult("not_found")
            outcome, written = rules.claim(row, worker_id, lease_ms, self.clock())
            row = self._put_proposal(rows, row, written)
            return ClaimResult(outcome, rules.lease(row, worker_id) if written else None, row.proposal)

    def renew_action_proposal_lease(
        self, scope: ProposalScope, proposal_id: str, token: str, generation: int, *, lease_ms: int
    ) -> RenewResult:
        """Extend a live lease; ``lost`` once it expired or another claim moved the generation."""
        check_lease_ms(lease_ms)
        lock, rows = self._proposal_state
        with lock:
            row = self._scoped_proposal(scope, proposal_id)
            if row is None:
                return RenewResult("not_found")
            outcome, written = rules.renew(row, token, generation, lease_ms, self.clock())
            row = self._put_proposal(rows, row, written)
            return RenewResult(outcome, row.proposal.lease_expires_at if written else None)

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
        lock, rows = self._proposal_state
        with lock:
            row = self._scoped_proposal(scope, proposal_id)
            if row is None:
                return "not_found"
            outcome, written = rules.settle(row, token, generation, status, result, error, self.clock())
            self._put_proposal(rows, row, written)
            return outcome

    def claim_next_action_proposal(self, worker_id: str, lease_ms: int) -> ProposalLease | None:
        """Privileged: lease the longest-due queued proposal or expired lease, across scopes."""
        check_identity("worker_id", worker_id)
        check_lease_ms(lease_ms)
        lock, rows = self._proposal_state
        with lock:
            now = self.clock()
            due = [(rules.due_at(r.proposal), r.proposal.id, r) for r in rows.values()]
            ready = sorted((d, i, r) for d, i, r in due if d is not None and d <= now)
            for _, _, row in ready:
                _outcome, written = rules.claim(row, worker_id, lease_ms, now)
                if written is not None:
                    return rules.lease(self._put_proposal(rows, row, written), worker_id)
            return None

    def expire_action_proposals(self, limit: int = DEFAULT_LIST_LIMIT) -> list[str]:
        """Privileged: expire up to ``limit`` overdue pending proposals, oldest deadline first."""
        check_limit(limit)
        lock, rows = self._proposal_state
        with lock:
            now = self.clock()
            overdue = sorted(
                (r for r in rows.values() if rules.is_overdue(r.proposal, now)),
                key=lambda r: (r.proposal.expires_at or 0, r.proposal.id),
            )[:limit]
            for row in overdue:
                self._put_proposal(rows, row, rules.expire(row, now))
            return [r.proposal.id for r in overdue]

    def unannounced_expired_proposals(
        self, since_ms: int, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[ActionProposal]:
        """Privileged: expired, not yet announced proposals with a deadline from ``since_ms`` on."""
        check_limit(limit)
        lock, rows = self._proposal_state
        with lock:
            found = [r.proposal for r in rows.values() if r.proposal.status == "expired"
                     and r.proposal.settled_at is None and (r.proposal.expires_at or 0) >= since_ms]
        return sorted(found, key=lambda p: (p.expires_at or 0, p.id))[:limit]

    def mark_expiry_announced(self, proposal: ActionProposal) -> bool:
        """Privileged: set ``settled_at`` on an expired proposal, fenced on its version."""
        lock, rows = self._proposal_state
        with lock:
            row = rows.get(proposal.id)
            if row is None or row.proposal.version != proposal.version:
                return False
            new = rules.announce_expiry(row, self.clock())
            if new is None:
                return False
            self._put_proposal(rows, row, new)
            return True

    def _delete_thread_proposals(self, thread_id: str) -> int:
        """Drop the proposals of a deleted thread (the SQL foreign key cascades; the twin must too)."""
        lock, rows = self._proposal_state
        with lock:
            doomed = [pid for pid, r in rows.items() if r.proposal.thread_id == thread_id]
            for pid in doomed:
                del rows[pid]
            return len(doomed)

    @staticmethod
    def _put_proposal(
        rows: dict[str, rules.StoredProposal], old: rules.StoredProposal, new: rules.StoredProposal | None
    ) -> rules.StoredProposal:
        if new is None:
            return old
        rows[new.proposal.id] = new
        return new

