"""``SqlMemoryRows``: the memory tables through the agent store's SQLAlchemy engine (PostgreSQL,
MySQL / MariaDB, SQLite): portable Core statements, each write its own short transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from lunora_jobs.memory.graph import Edge, Entity, Relation
from lunora_jobs.memory.rows.base import entity_id
from lunora_jobs.store.schema import edges, entities, episodes, steps


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

    def upsert_graph(
        self, owner: str, entities_: Sequence[Entity], relations: Sequence[Relation], *, now: int,
        max_entities: int, max_edges: int, ttl_ms: int | None,
    ) -> None:
        """One transaction: the upserts (ON CONFLICT / ON DUPLICATE KEY), then the pruning."""
        rows = [{"id": entity_id(owner, e.key), "owner": owner, "name": e.name, "normalized": e.key,
                 "type": e.type, "weight": 1.0, "updated_at": now} for e in entities_]
        links = [{"owner": owner, "src": entity_id(owner, r.src), "relation": r.relation,
                  "dst": entity_id(owner, r.dst), "weight": 1.0, "updated_at": now} for r in relations]
        with self.engine.begin() as conn:
            if rows:
                keys, sets = ("owner", "normalized"), ("name", "type", "weight")
                conn.execute(self._upsert(entities, rows, keys, sets))
            if links:
                conn.execute(self._upsert(edges, links, ("owner", "src", "relation", "dst"), ("weight",)))
            self._prune_graph(conn, owner, now, max_entities, max_edges, ttl_ms)

    def graph_entities(self, owner: str, *, now: int, ttl_ms: int | None) -> list[tuple[str, str]]:
        """One read of the owner's entity names."""
        query = sa.select(entities.c.id, entities.c.normalized).where(entities.c.owner == owner)
        if ttl_ms is not None:
            query = query.where(entities.c.updated_at >= now - ttl_ms)
        with self.engine.connect() as conn:
            return [(str(r[0]), str(r[1])) for r in conn.execute(query.order_by(entities.c.id))]

    def graph_edges(self, owner: str, nodes: Sequence[str], *, now: int, ttl_ms: int | None) -> list[Edge]:
        """One read per BFS level (the ``(owner, src, ...)`` and ``(owner, dst)`` indexes)."""
        if not nodes:
            return []
        ids = list(nodes)
        query = sa.select(edges.c.src, edges.c.relation, edges.c.dst, edges.c.weight).where(
            edges.c.owner == owner, sa.or_(edges.c.src.in_(ids), edges.c.dst.in_(ids)))
        if ttl_ms is not None:
            query = query.where(edges.c.updated_at >= now - ttl_ms)
        with self.engine.connect() as conn:
            return [Edge(str(r[0]), str(r[1]), str(r[2]), float(r[3])) for r in conn.execute(query)]

    def count_graph(self, owner: str) -> tuple[int, int]:
        """Two COUNTs."""
        with self.engine.connect() as conn:
            counts = [int(conn.execute(sa.select(sa.func.count()).select_from(t).where(t.c.owner == owner))
                          .scalar_one()) for t in (entities, edges)]
        return counts[0], counts[1]

    def _upsert(self, table: sa.Table, rows: list[dict[str, Any]], keys: tuple[str, ...],
                sets: tuple[str, ...]) -> Any:
        """An INSERT that sets ``sets`` (and ``updated_at``) on a row colliding on ``keys``."""
        name = self.engine.dialect.name
        if name in ("mysql", "mariadb"):
            my = mysql.insert(table).values(rows)
            return my.on_duplicate_key_update({c: my.inserted[c] for c in (*sets, "updated_at")})
        dialect: Any = postgresql if name == "postgresql" else sqlite
        stmt = dialect.insert(table).values(rows)
        return stmt.on_conflict_do_update(
            index_elements=list(keys), set_={c: stmt.excluded[c] for c in (*sets, "updated_at")})

    def _prune_graph(
        self, conn: Connection, owner: str, now: int, max_entities: int, max_edges: int, ttl_ms: int | None
    ) -> None:
        mine_e, mine_l = entities.c.owner == owner, edges.c.owner == owner
        doomed: list[str] = []
        if ttl_ms is not None:
            conn.execute(sa.delete(edges).where(mine_l, edges.c.updated_at < now - ttl_ms))
            doomed += conn.execute(sa.select(entities.c.id).where(
                mine_e, entities.c.updated_at < now - ttl_ms)).scalars().all()
        lightest = (entities.c.weight, entities.c.updated_at, entities.c.id)
        doomed += conn.execute(sa.select(entities.c.id).where(mine_e, entities.c.id.not_in(doomed))
                               .order_by(*(c.desc() for c in lightest)).offset(max_entities)).scalars().all()
        if doomed:
            conn.execute(sa.delete(entities).where(mine_e, entities.c.id.in_(doomed)))
            touching = sa.or_(edges.c.src.in_(doomed), edges.c.dst.in_(doomed))
            conn.execute(sa.delete(edges).where(mine_l, touching))
        heaviest = (edges.c.weight.desc(), edges.c.updated_at.desc(), edges.c.id.desc())
        surplus = conn.execute(
            sa.select(edges.c.id).where(mine_l).order_by(*heaviest).offset(max_edges)
        ).scalars().all()
        if surplus:
            conn.execute(sa.delete(edges).where(mine_l, edges.c.id.in_(list(surplus))))

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
