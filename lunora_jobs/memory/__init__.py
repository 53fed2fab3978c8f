"""Agent memory as durable steps: ``define_agent(memory=...)``.

Semantic memory (the default kind) searches a source — a ``rag`` index, a callable, or a registered
function — as the run's owner:

- ``mode="inject"`` (default): the run-start step ``memory:retrieve`` searches once with the run's
  input, memoizes the hits, and every turn's prompt carries the recorded context;
- ``mode="agentic"``: the agent gets ``search_memory({query, top_k?})`` (ranked, cut snippets and
  deduplicated sources) and, with ``read=``, ``read_memory({id})``; each call is a memoized tool step.

A skill's ``memory`` (its knowledge) works the same way under its own name: ``memory:retrieve:<skill>``
or ``search_<skill>`` / ``read_<skill>``.

Episodic memory (``kind="episodic"``) summarizes each answered run in one sentence (the post-run
step ``memory:episode``) and injects the owner's latest episodes at run start (``memory:recall``),
bounded per owner by ``max_episodes`` and ``ttl_s``.

Graph memory (``kind="graph"``) extracts entities and relations from each answered run
(``memory:extract``, one structured model call, idempotent upserts of normalized names) and walks a
bounded breadth-first search from the entities the next run's input names (``memory:traverse``),
bounded per owner by ``max_entities`` / ``max_edges`` / ``ttl_s``.
"""

from lunora_jobs.memory.identity import MemoryIdentity
from lunora_jobs.memory.options import (
    EpisodicMemory,
    GraphMemory,
    MemoryOption,
    SemanticMemory,
    coerce_memory,
)
from lunora_jobs.memory.search import MemoryHit, MemoryQuery, SearchResult, normalize, search
from lunora_jobs.memory.tools import memory_tools, project

__all__ = [
    "EpisodicMemory",
    "GraphMemory",
    "MemoryHit",
    "MemoryIdentity",
    "MemoryOption",
    "MemoryQuery",
    "SearchResult",
    "SemanticMemory",
    "coerce_memory",
    "memory_tools",
    "normalize",
    "project",
    "search",
]
