"""The owner-keyed tiers' step bodies: what ``memory:recall`` / ``memory:traverse`` read and what
``memory:episode`` / ``memory:extract`` write, given the rows, the model and the clock (the engine's
memory kind supplies them and records the returned memo)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lunora_jobs.memory import episodic, graph
from lunora_jobs.memory.options import EpisodicMemory, GraphMemory
from lunora_jobs.memory.rows import MemoryRows
from lunora_jobs.models.base import Model, Usage


def ttl_ms(memory: EpisodicMemory | GraphMemory) -> int | None:
    """The memory's TTL in ms (None: no age limit)."""
    return None if memory.ttl_s is None else int(memory.ttl_s * 1000)


def read(
    rows: MemoryRows, memory: EpisodicMemory | GraphMemory, owner: str, text: str, now: int
) -> dict[str, Any]:
    """The run-start read's memo: ``{"context": ...}`` plus what it found."""
    if isinstance(memory, EpisodicMemory):
        recalled = rows.recent_episodes(owner, memory.recall, now=now, ttl_ms=ttl_ms(memory))
        return {"context": episodic.render(recalled), "episodes": len(recalled)}
    known = rows.graph_entities(owner, now=now, ttl_ms=ttl_ms(memory))
    key_of = dict(known)
    id_of = {key: entity_id for entity_id, key in known}

    def edges_of(nodes: Sequence[str]) -> list[graph.Edge]:
        # The walk runs on names, so its tie-breaks (and the rendering) read alphabetically.
        found = rows.graph_edges(owner, [id_of[n] for n in nodes], now=now, ttl_ms=ttl_ms(memory))
        return [graph.Edge(key_of[e.src], e.relation, key_of[e.dst], e.weight)
                for e in found if e.src in key_of and e.dst in key_of]

    seeds = [key_of[i] for i in graph.match_seeds(text, known, memory.max_seeds)]
    edges = graph.traverse(seeds, edges_of, depth=memory.depth, fan_out=memory.fan_out,
                           max_nodes=memory.max_nodes)
    return {"context": graph.render(edges), "seeds": len(seeds), "edges": len(edges)}


def write(
    rows: MemoryRows, memory: EpisodicMemory | GraphMemory, model: Model, *, owner: str, run_id: str,
    request: str, answer: str, now: int,
) -> tuple[dict[str, Any], Usage]:
    """The post-run write: one model call, then an idempotent write; its memo and the call's usage."""
    if isinstance(memory, EpisodicMemory):
        summary, usage = episodic.summarize(model, request, answer)
        inserted = rows.add_episode(owner, run_id, summary, now=now, max_episodes=memory.max_episodes,
                                    ttl_ms=ttl_ms(memory))
        return {"summary": summary, "inserted": inserted}, usage
    entities, relations, usage = graph.extract(model, request, answer)
    rows.upsert_graph(owner, entities, relations, now=now, max_entities=memory.max_entities,
                      max_edges=memory.max_edges, ttl_ms=ttl_ms(memory))
    return {"entities": [e.key for e in entities],
            "relations": [[r.src, r.relation, r.dst] for r in relations]}, usage
