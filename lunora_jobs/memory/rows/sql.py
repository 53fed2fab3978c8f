"""``SqlMemoryRows``: the memory tables through the agent store's SQLAlchemy engine (PostgreSQL,
MySQL / MariaDB, SQLite): portable Core statements, each write its own short transaction."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from lunora_jobs.store.schema import episodes, steps


class SqlMemoryRows:
    """``MemoryRows`` on a SQL database (the one ``SqlStore`` uses)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add_episode(
        self, owner: str, run_id: str, summary: str, *, now: int, max_episodes: int, ttl_ms: int | None
    ) -> bool:
        """Insert once per run (the unique ``run_id`` refuses a repeat), then prune the owner's rows."""
        row = {"id": run_id, "owner": owner, "run_id": run_id, "summary": summary, "created_at": now}
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(episodes).values(row))
            inserted = True
        except IntegrityError:
            inserted = False  # recorded by an earlier attempt of the same step
        with self.engine.begin() as conn:
            mine = episodes.c.owner == owner
            if ttl_ms is not None:
                conn.execute(sa.delete(episodes).where(mine, episodes.c.created_at < now - ttl_ms))
            surplus = conn.execute(
                sa.select(episodes.c.id).where(mine)
                .order_by(episodes.c.created_at.desc(), episodes.c.id.desc()).offset(max_episodes)
            ).scalars().all()
            if surplus:
                conn.execute(sa.delete(episodes).where(mine, episodes.c.id.in_(list(surplus))))
        return inserted

    def recent_episodes(self, owner: str, limit: int, *, now: int, ttl_ms: int | None) -> list[str]:
        """Newest first from the ``(owner, created_at)`` index, returned oldest first."""
        query = sa.select(episodes.c.summary).where(episodes.c.owner == owner)
        if ttl_ms is not None:
            query = query.where(episodes.c.created_at >= now - ttl_ms)
        query = query.order_by(episodes.c.created_at.desc(), episodes.c.id.desc()).limit(limit)
        with self.engine.connect() as conn:
            newest = [str(s) for s in conn.execute(query).scalars()]
        return newest[::-1]

    def count_episodes(self, owner: str) -> int:
        """One COUNT over the owner's rows."""
        query = sa.select(sa.func.count()).select_from(episodes).where(episodes.c.owner == owner)
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def stalled_writes(self, names: Sequence[str], now: int, limit: int) -> list[tuple[str, str]]:
        """One read on the ``(status, lease_expires_at)`` index of the ledger."""
        if not names:
            return []
        query = (
            sa.select(steps.c.run_id, steps.c.name)
            .where(steps.c.status == "running", steps.c.lease_expires_at < now, steps.c.name.in_(list(names)))
            .order_by(steps.c.lease_expires_at).limit(limit)
        )
        with self.engine.connect() as conn:
            return [(str(r[0]), str(r[1])) for r in conn.execute(query)]
