"""Privileged worker discovery over SQL: claim the next due proposal, expire overdue ones.

These search across scopes, so they belong to worker infrastructure (a Celery beat tick, a worker
loop), never to a public route. Both read over an index and write with fenced UPDATEs, so any
number of workers and sweepers may run at once.
"""

from __future__ import annotations

from functools import partial

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.store.proposals import _state_machine as rules
from lunora_jobs.store.proposals._validation import check_identity, check_lease_ms, check_limit
from lunora_jobs.store.proposals.records import DEFAULT_LIST_LIMIT, ActionProposal, ProposalLease
from lunora_jobs.store.schema import action_proposals as T
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._proposals.rows import (
    discovery_query,
    expiry_query,
    fenced_update,
    to_stored,
    unannounced_query,
)

DISCOVERY_BATCH = 16
"""Candidates read per discovery round, so racing workers spread over different rows."""

DISCOVERY_ROUNDS = 32
"""Re-reads when every candidate of a batch was taken by other workers meanwhile."""


class SqlProposalDiscovery(SqlBase):
    """``claim_next_action_proposal`` and ``expire_action_proposals`` of ``SqlProposalStore``."""

    def claim_next_action_proposal(self, worker_id: str, lease_ms: int) -> ProposalLease | None:
        """Privileged: lease the longest-due queued proposal or expired lease, across scopes.

        Reads a batch of due candidates over the ``(status, due_at)`` index and tries each with the
        fenced UPDATE; a candidate another worker took is simply skipped.
        """
        check_identity("worker_id", worker_id)
        check_lease_ms(lease_ms)
        for _ in range(DISCOVERY_ROUNDS):
            now = self.clock()
            with self._read() as conn:
                rows = conn.execute(discovery_query(now, DISCOVERY_BATCH)).mappings()
                candidates = [to_stored(r) for r in rows]
            if not candidates:
                return None
            for row in candidates:
                _outcome, written = rules.claim(row, worker_id, lease_ms, now)
                if written is None:
                    continue
                if self._write(partial(fenced_update, old=row, new=written)):
                    return rules.lease(written, worker_id)
        return None

    def expire_action_proposals(self, limit: int = DEFAULT_LIST_LIMIT) -> list[str]:
        """Privileged: expire up to ``limit`` overdue pending proposals (``(status, expires_at)`` index)."""
        check_limit(limit)
        now = self.clock()
        due = expiry_query(now, limit)

        def sweep(conn: Connection) -> list[str]:
            expired: list[str] = []
            for proposal_id in list(conn.execute(due).scalars()):
                # Fenced on the same condition: a decision that landed meanwhile wins over expiry.
                stmt = (
                    T.update()
                    .where(T.c.id == proposal_id, T.c.status == "pending", T.c.expires_at <= now)
                    .values(status="expired", version=T.c.version + 1, updated_at=now)
                )
                if conn.execute(stmt).rowcount == 1:
                    expired.append(str(proposal_id))
            return expired

        return self._write(sweep)

    def unannounced_expired_proposals(
        self, since_ms: int, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[ActionProposal]:
        """Privileged: expired, not yet announced proposals with a deadline from ``since_ms`` on."""
        check_limit(limit)
        with self._read() as conn:
            rows = conn.execute(unannounced_query(since_ms, limit)).mappings()
            return [to_stored(r).proposal for r in rows]

    def mark_expiry_announced(self, proposal: ActionProposal) -> bool:
        """Privileged: set ``settled_at`` on an expired proposal, fenced on its version."""
        old = rules.StoredProposal(proposal)
        new = rules.announce_expiry(old, self.clock())
        if new is None:
            return False
        values = {"settled_at": new.proposal.settled_at, "version": new.proposal.version,
                  "updated_at": new.proposal.updated_at}
        fence = sa.and_(T.c.id == proposal.id, T.c.version == proposal.version, T.c.status == "expired")
        stmt = T.update().where(fence).values(**values)
        return bool(self._write(lambda conn: conn.execute(stmt).rowcount == 1))
