"""``LocalMemoryRows``: the in-process twin of ``SqlMemoryRows`` for ``InMemoryStore`` (tests, the
harness): the same semantics, kept beside the store object it serves."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from lunora_jobs.memory.graph import Edge, Entity, Relation
from lunora_jobs.memory.rows.base import entity_id
from lunora_jobs.store.base import AgentStore


@dataclass(slots=True)
class _Node:
    key: str
    weight: float
    updated_at: int


@dataclass(slots=True)
class _Link:
    seq: int
    weight: float
    updated_at: int


@dataclass(frozen=True, slots=True)
class _Episode:
    created_at: int
    run_id: str
    summary: str


class LocalMemoryRows:
    """``MemoryRows`` in process memory, over an ``AgentStore`` without SQL (its ledger for the sweep)."""

    def __init__(self, store: AgentStore) -> None:
        self.store = store
        self._episodes: dict[str, list[_Episode]] = {}
        self._lock = threading.Lock()
        self._nodes: dict[str, dict[str, _Node]] = {}  # owner -> entity id -> node
        self._links: dict[str, dict[tuple[str, str, str], _Link]] = {}  # owner -> (src, rel, dst) -> link
        self._seq = 0

    def add_episode(
        self, owner: str, run_id: str, summary: str, *, now: int, max_episodes: int, ttl_ms: int | None
    ) -> bool:
        """Insert once per run, then prune like the SQL twin (TTL, then the oldest beyond the cap)."""
        with self._lock:
            known = any(e.run_id == run_id for rows in self._episodes.values() for e in rows)
            rows = self._episodes.setdefault(owner, [])
            if not known:
                rows.append(_Episode(now, run_id, summary))
            if ttl_ms is not None:
                rows[:] = [e for e in rows if e.created_at >= now - ttl_ms]
            rows.sort(key=lambda e: (e.created_at, e.run_id))
            del rows[: max(0, len(rows) - max_episodes)]
            return not known

    def recent_episodes(self, owner: str, limit: int, *, now: int, ttl_ms: int | None) -> list[str]:
        """The newest ``limit``, oldest first."""
        with self._lock:
            rows = sorted(self._episodes.get(owner, []), key=lambda e: (e.created_at, e.run_id))
        if ttl_ms is not None:
            rows = [e for e in rows if e.created_at >= now - ttl_ms]
        return [e.summary for e in rows[-limit:]]

    def count_episodes(self, owner: str) -> int:
        """How many the owner has."""
        with self._lock:
            return len(self._episodes.get(owner, []))

    def upsert_graph(
        self, owner: str, entities: Sequence[Entity], relations: Sequence[Relation], *, now: int,
        max_entities: int, max_edges: int, ttl_ms: int | None,
    ) -> None:
        """Set the rows (absolute values), then prune like the SQL twin."""
        with self._lock:
            nodes = self._nodes.setdefault(owner, {})
            links = self._links.setdefault(owner, {})
            for entity in entities:
                nodes[entity_id(owner, entity.key)] = _Node(entity.key, 1.0, now)
            for rel in relations:
                key = (entity_id(owner, rel.src), rel.relation, entity_id(owner, rel.dst))
                seq = links[key].seq if key in links else self._next_seq()
                links[key] = _Link(seq, 1.0, now)
            doomed: set[str] = set()
            if ttl_ms is not None:
                for lk in [k for k, v in links.items() if v.updated_at < now - ttl_ms]:
                    del links[lk]
                doomed |= {i for i, n in nodes.items() if n.updated_at < now - ttl_ms}
            kept = sorted((i for i in nodes if i not in doomed),
                          key=lambda i: (nodes[i].weight, nodes[i].updated_at, i), reverse=True)
            doomed |= set(kept[max_entities:])
            for node_id in doomed:
                del nodes[node_id]
            for lk in [k for k in links if k[0] in doomed or k[2] in doomed]:
                del links[lk]
            ranked = sorted(links, key=lambda k: (links[k].weight, links[k].updated_at, links[k].seq),
                            reverse=True)
            for lk in ranked[max_edges:]:
                del links[lk]

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def graph_entities(self, owner: str, *, now: int, ttl_ms: int | None) -> list[tuple[str, str]]:
        """The owner's ``(id, key)`` pairs."""
        with self._lock:
            nodes = dict(self._nodes.get(owner, {}))
        return sorted((i, n.key) for i, n in nodes.items() if ttl_ms is None or n.updated_at >= now - ttl_ms)

    def graph_edges(self, owner: str, nodes: Sequence[str], *, now: int, ttl_ms: int | None) -> list[Edge]:
        """The owner's edges touching ``nodes``."""
        wanted = set(nodes)
        with self._lock:
            links = dict(self._links.get(owner, {}))
        return [Edge(k[0], k[1], k[2], v.weight) for k, v in links.items()
                if (k[0] in wanted or k[2] in wanted) and (ttl_ms is None or v.updated_at >= now - ttl_ms)]

    def count_graph(self, owner: str) -> tuple[int, int]:
        """Entities and edges of the owner."""
        with self._lock:
            return len(self._nodes.get(owner, {})), len(self._links.get(owner, {}))

    def stalled_writes(self, names: Sequence[str], now: int, limit: int) -> list[tuple[str, str]]:
        """A scan of the in-memory ledger (small by nature)."""
        wanted = set(names)
        found = [
            (step.run_id, step.name)
            for run in self.store.list_runs()
            for step in self.store.list_steps(run.id)
            if step.name in wanted and step.status == "running" and step.lease_expires_at < now
        ]
        return found[:limit]
