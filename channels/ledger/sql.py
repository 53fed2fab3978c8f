"""The inbound ledger on the app's SQL database (the ``agent_inbound`` table, revision 0006).

Every statement is one round trip in autocommit: the claim is a plain INSERT whose primary key
decides the winner (portable: no dialect's upsert), a retake is a compare-and-set UPDATE on the
row's ``updated_at``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from channels.ledger.base import CLAIM_STALE_MS, Claim, PendingReply
from lunora_jobs.store.schema import inbound, runs
from lunora_jobs.store.sql import SqlStore

_TERMINAL = ("completed", "failed", "cancelled")


class SqlInboundLedger:
    """``InboundLedger`` over ``store.engine``; creates its table with the store's other tables
    unless the store was built with ``auto_create_tables=False`` (then ``lunora db upgrade``)."""

    def __init__(self, store: SqlStore) -> None:
        self.engine = store.engine.execution_options(isolation_level="AUTOCOMMIT")
        if store.auto_create_tables:  # once per store: ``ledger_for`` keeps one ledger per store
            store.ensure_tables()

    def claim(self, key: str, *, channel: str, agent: str, run_id: str, reply: dict[str, Any] | None,
              now: int) -> Claim:
        """Insert the row; on a clash read it and either report the duplicate or retake a stale claim."""
        row = {"key": key, "channel": channel, "agent": agent, "run_id": run_id, "status": "claimed",
               "reply": json.dumps(reply) if reply is not None else None,
               "reply_status": "pending" if reply is not None else "none", "created_at": now,
               "updated_at": now}
        with self.engine.connect() as conn:
            try:
                conn.execute(sa.insert(inbound).values(**row))
                return Claim("claimed", run_id)
            except IntegrityError:
                pass
            found = conn.execute(
                sa.select(inbound.c.run_id, inbound.c.status, inbound.c.updated_at)
                .where(inbound.c.key == key)
            ).one_or_none()
            if found is None:  # pragma: no cover - rows are never deleted
                return Claim("duplicate", run_id)
            if found.status != "claimed" or now - found.updated_at < CLAIM_STALE_MS:
                return Claim("duplicate", found.run_id)
            taken = conn.execute(
                sa.update(inbound)
                .where(inbound.c.key == key, inbound.c.status == "claimed",
                       inbound.c.updated_at == found.updated_at)
                .values(updated_at=now)
            ).rowcount
            if taken != 1:  # another delivery retook it first
                return Claim("duplicate", found.run_id)
            return Claim("claimed", found.run_id, retaken=True)

    def started(self, key: str, now: int) -> None:
        """Mark the row started."""
        with self.engine.connect() as conn:
            conn.execute(
                sa.update(inbound).where(inbound.c.key == key).values(status="started", updated_at=now)
            )

    def release(self, key: str) -> None:
        """Age a failed claim so the next delivery retakes it."""
        with self.engine.connect() as conn:
            conn.execute(
                sa.update(inbound)
                .where(inbound.c.key == key, inbound.c.status == "claimed")
                .values(updated_at=0)
            )

    def reply_for(self, run_id: str) -> dict[str, Any] | None:
        """The stored reply target of the run's delivery."""
        with self.engine.connect() as conn:
            value = conn.execute(
                sa.select(inbound.c.reply).where(inbound.c.run_id == run_id)
            ).scalar_one_or_none()
        return json.loads(value) if value else None

    def reply_done(self, run_id: str, now: int) -> None:
        """Close the pending reply."""
        with self.engine.connect() as conn:
            conn.execute(
                sa.update(inbound).where(inbound.c.run_id == run_id, inbound.c.reply_status == "pending")
                .values(reply_status="done", updated_at=now)
            )

    def pending_replies(self, ended_before: int, limit: int) -> Sequence[PendingReply]:
        """One indexed join: pending rows whose run is over."""
        query = (
            sa.select(inbound.c.run_id, inbound.c.agent, inbound.c.reply)
            .select_from(inbound.join(runs, runs.c.id == inbound.c.run_id))
            .where(inbound.c.reply_status == "pending", runs.c.status.in_(_TERMINAL),
                   runs.c.updated_at < ended_before)
            .order_by(inbound.c.updated_at)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [PendingReply(r.run_id, r.agent, json.loads(r.reply)) for r in rows if r.reply]
