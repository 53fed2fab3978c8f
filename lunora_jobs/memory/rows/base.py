"""``MemoryRows``: the memory tiers' storage, beside the agent store on the same database.

Graph rows live in ``agent_entities`` (unique per owner and normalized name) and ``agent_edges``
(unique per owner and triple); writes are upserts of absolute values. Episodes live in
``agent_episodes`` (one per run: ``run_id`` is unique, so a write repeated after a crash inserts
nothing). Everything is keyed by owner, and every write prunes the owner's rows to the declared
bounds in the same call, so what one owner's memory costs is bounded by its options, never by its
history.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

from lunora_jobs.memory.graph import Edge, Entity, Relation


def entity_id(owner: str, key: str) -> str:
    """The id of the owner's entity ``key``: derived, so every writer upserts the same row."""
    return hashlib.sha1(f"{owner}\0{key}".encode()).hexdigest()[:32]


class MemoryRows(Protocol):
    """What the memory steps read and write. ``SqlMemoryRows`` and ``LocalMemoryRows`` implement it."""

    def add_episode(
        self, owner: str, run_id: str, summary: str, *, now: int, max_episodes: int, ttl_ms: int | None
    ) -> bool:
        """Record the run's episode unless it is recorded already (True when this call inserted it),
        then prune the owner's episodes older than ``ttl_ms`` and beyond the newest ``max_episodes``."""
        ...

    def recent_episodes(self, owner: str, limit: int, *, now: int, ttl_ms: int | None) -> list[str]:
        """The owner's newest ``limit`` episode summaries (none older than ``ttl_ms``), oldest first."""
        ...

    def count_episodes(self, owner: str) -> int:
        """How many episodes the owner has stored (what the caps bound)."""
        ...

    def upsert_graph(
        self, owner: str, entities: Sequence[Entity], relations: Sequence[Relation], *, now: int,
        max_entities: int, max_edges: int, ttl_ms: int | None,
    ) -> None:
        """Upsert the entities and edges (absolute values: weight 1, ``updated_at`` now), then prune
        the owner's graph: rows older than ``ttl_ms``, then the oldest-and-lightest beyond the caps
        (an entity goes with its edges)."""
        ...

    def graph_entities(self, owner: str, *, now: int, ttl_ms: int | None) -> list[tuple[str, str]]:
        """``(id, normalized name)`` of the owner's entities (bounded by ``max_entities``)."""
        ...

    def graph_edges(
        self, owner: str, nodes: Sequence[str], *, now: int, ttl_ms: int | None
    ) -> list[Edge]:
        """The owner's edges touching any of ``nodes`` (entity ids)."""
        ...

    def count_graph(self, owner: str) -> tuple[int, int]:
        """How many entities and edges the owner has stored (what the caps bound)."""
        ...

    def stalled_writes(self, names: Sequence[str], now: int, limit: int) -> list[tuple[str, str]]:
        """``(run_id, step)`` of post-run memory steps named in ``names`` that were claimed and are
        no longer worked on (the lease expired: a killed worker, a released failed attempt)."""
        ...
