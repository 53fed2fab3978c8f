"""Graph memory: entities and relations extracted from answered runs, traversed on the next run.

``memory:extract`` (after a run completed) makes one model call with a JSON output schema over the
exchange and upserts what it returns: names are normalized (trim, collapse whitespace, lowercase),
values are absolute (a repeated write sets the same rows, never increments), so a crash and a retry
leave one copy of each entity and edge. ``memory:traverse`` (at run start) matches seed entities in
the run's input and walks a bounded breadth-first search (``depth``, ``max_seeds``, ``fan_out``,
``max_nodes``), rendering deterministic ``- alice —[works_at]→ acme`` lines. Everything here is pure:
the rows come from ``MemoryRows``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lunora_jobs.models.base import Model, Usage

MAX_NAME = 255
WORD = re.compile(r"[\w@+-]+(?:\.[\w@+-]+)*")
INSTRUCTIONS = (
    "Extract the durable facts of the exchange above as a knowledge graph about this user: the "
    "entities (people, organisations, places, products, ...) and the relations between them. Answer "
    'with JSON only: {"entities": [{"name": str, "type": str}], "relations": [{"src": str, '
    '"relation": str, "dst": str}]}. Use short relation names such as works_at or lives_in.'
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {"type": "array", "items": {
            "type": "object", "properties": {"name": {"type": "string"}, "type": {"type": "string"}},
            "required": ["name"]}},
        "relations": {"type": "array", "items": {
            "type": "object",
            "properties": {name: {"type": "string"} for name in ("src", "relation", "dst")},
            "required": ["src", "relation", "dst"]}},
    },
    "required": ["entities", "relations"],
}


@dataclass(frozen=True, slots=True)
class Entity:
    """A normalized entity: ``key`` is the normalized name, ``name`` how it was written."""

    key: str
    name: str
    type: str | None = None


@dataclass(frozen=True, slots=True)
class Relation:
    """A normalized edge between two entity keys."""

    src: str
    relation: str
    dst: str


@dataclass(frozen=True, slots=True)
class Edge:
    """A stored edge, as traversal reads it (entity ids, weight)."""

    src: str
    relation: str
    dst: str
    weight: float


def normalize(name: str) -> str:
    """Trim, collapse whitespace, lowercase (distinct senses of one string merge: keep names specific)."""
    return " ".join(str(name).split()).lower()[:MAX_NAME]


def normalize_relation(relation: str) -> str:
    """``Works At`` -> ``works_at``."""
    return "_".join(str(relation).split()).lower()[:128]


def extract(model: Model, request: str, answer: str) -> tuple[list[Entity], list[Relation], Usage]:
    """One model call over the exchange; its JSON parsed and normalized (``ValueError`` if it is not
    the asked shape: the step retries, then records the write as skipped)."""
    turn = model.generate([
        {"role": "user", "content": request},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": INSTRUCTIONS},
    ], output_schema=SCHEMA)
    entities, relations = parse(turn.text or "")
    return entities, relations, turn.usage


def parse(text: str) -> tuple[list[Entity], list[Relation]]:
    """The extraction reply as entities (every relation end included) and relations, deduplicated."""
    data = json.loads(_strip_fence(text))
    if not isinstance(data, dict) or not isinstance(data.get("entities", []), list) \
            or not isinstance(data.get("relations", []), list):
        raise ValueError("the extraction is not {'entities': [...], 'relations': [...]}")
    entities: dict[str, Entity] = {}
    for item in data.get("entities", []):
        if isinstance(item, dict) and normalize(item.get("name", "")):
            key = normalize(item["name"])
            kind = item.get("type")
            entities.setdefault(key, Entity(key, " ".join(str(item["name"]).split())[:MAX_NAME],
                                            str(kind)[:64] if kind else None))
    relations: dict[tuple[str, str, str], Relation] = {}
    for item in data.get("relations", []):
        if not isinstance(item, dict):
            continue
        src, dst = normalize(item.get("src", "")), normalize(item.get("dst", ""))
        relation = normalize_relation(item.get("relation", ""))
        if src and dst and relation:
            for key, raw in ((src, item["src"]), (dst, item["dst"])):
                entities.setdefault(key, Entity(key, " ".join(str(raw).split())[:MAX_NAME]))
            relations.setdefault((src, relation, dst), Relation(src, relation, dst))
    return list(entities.values()), list(relations.values())


def match_seeds(text: str, known: Sequence[tuple[str, str]], limit: int) -> list[str]:
    """Ids of the entities (``(id, key)`` pairs) named in ``text`` as whole words, by first mention,
    at most ``limit``."""
    haystack = f" {_words(text)} "
    found: list[tuple[int, str, str]] = []
    for entity_id, key in known:
        words = _words(key)
        at = haystack.find(f" {words} ") if words else -1
        if at >= 0:
            found.append((at, key, entity_id))
    found.sort()
    return [entity_id for _, _, entity_id in found[:limit]]


def traverse(
    seeds: Sequence[str], edges_of: Callable[[Sequence[str]], Sequence[Edge]], *, depth: int, fan_out: int,
    max_nodes: int,
) -> list[Edge]:
    """Breadth-first from ``seeds``: per level one ``edges_of(frontier)`` read, each node's ``fan_out``
    heaviest edges (ties by relation, then ends), stopping at ``depth`` levels or ``max_nodes`` nodes.
    Deterministic: the same rows give the same edges in the same order."""
    nodes = list(dict.fromkeys(seeds))[:max_nodes]
    seen_nodes = set(nodes)
    seen_edges: set[tuple[str, str, str]] = set()
    result: list[Edge] = []
    frontier = list(nodes)
    for _ in range(depth):
        if not frontier:
            break
        rows = edges_of(frontier)
        following: list[str] = []
        for node in frontier:
            mine = sorted((e for e in rows if node in (e.src, e.dst)),
                          key=lambda e: (-e.weight, e.relation, e.src, e.dst))[:fan_out]
            for edge in mine:
                key = (edge.src, edge.relation, edge.dst)
                other = edge.dst if edge.src == node else edge.src
                if other not in seen_nodes:
                    if len(seen_nodes) >= max_nodes:
                        continue
                    seen_nodes.add(other)
                    following.append(other)
                if key not in seen_edges:
                    seen_edges.add(key)
                    result.append(edge)
        frontier = following
    return result


def render(edges: Sequence[Edge]) -> str:
    """``- alice —[works_at]→ acme`` lines, in traversal order (edges between normalized names)."""
    return "\n".join(f"- {e.src} —[{e.relation}]→ {e.dst}" for e in edges)


def _words(text: str) -> str:
    """``text`` normalized to its words joined by single spaces (punctuation is not part of a name)."""
    return " ".join(WORD.findall(normalize(text)))


def _strip_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped
