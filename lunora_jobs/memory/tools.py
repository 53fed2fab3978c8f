"""Agentic semantic memory: the ``search_memory`` / ``read_memory`` tools the agent is given.

With ``mode="agentic"`` nothing is injected: the model searches when it decides to. Each call is an
ordinary tool call, so it is a memoized durable step (``tool:search_memory:<call_id>``): a replay
returns the recorded hits and never searches again. The search runs as the run's owner (the
``ToolContext``'s, which the engine took from the run row), so the source's RLS applies to it.

``search_memory({query, top_k?})`` answers with a compact projection, never the joined context::

    {"hits": [{"id": "faq#0", "source_id": "faq", "score": 0.83, "snippet": "Reset your ..."}],
     "sources": ["faq"]}

``read_memory({id})`` (only with ``read=``) returns one document's text.
"""

from __future__ import annotations

from typing import Any

from lunora_jobs.memory.identity import MemoryIdentity
from lunora_jobs.memory.options import SemanticMemory
from lunora_jobs.memory.search import FunctionRunner, SearchResult, read_document, search
from lunora_jobs.tools import ToolContext, ToolDefinition


def memory_tools(memory: SemanticMemory, agent: str) -> list[ToolDefinition]:
    """The tools ``memory`` mints for ``agent`` (none in inject mode)."""
    if memory.mode != "agentic":
        return []
    whose = f"the {memory.label!r} skill's knowledge" if memory.label else "long-term memory"
    tools = [ToolDefinition(
        name=memory.search_tool,
        description=(f"Search {whose}. Returns ranked hits (id, source_id, score, snippet); search again "
                     "with a refined query if they fall short."),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "A self-contained search query."},
                "top_k": {"type": "integer", "minimum": 1, "maximum": memory.max_top_k,
                          "description": f"How many hits (default {memory.top_k})."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        execute=lambda input, ctx: project(
            search(memory, input["query"], _identity(ctx, agent), _runner(ctx), top_k=input.get("top_k")),
            memory.snippet_chars,
        ),
    )]
    if memory.read is not None:
        tools.append(ToolDefinition(
            name=memory.read_tool,
            description=f"Read one document of {whose} in full, by a hit's source_id (or id) from a search.",
            input_schema={
                "type": "object",
                "properties": {"id": {"type": "string", "minLength": 1}},
                "required": ["id"],
                "additionalProperties": False,
            },
            execute=lambda input, ctx: read_document(
                memory, input["id"], _identity(ctx, agent), _runner(ctx)
            ),
        ))
    return tools


def project(result: SearchResult, snippet_chars: int) -> dict[str, Any]:
    """The compact answer of ``search_memory``: ranked hits with cut snippets, deduplicated sources."""
    return {
        "hits": [
            {"id": h.id, "source_id": h.source_id, "score": round(h.score, 4),
             "snippet": snippet(h.text, snippet_chars)}
            for h in result.hits
        ],
        "sources": list(result.sources),
    }


def snippet(text: str, limit: int) -> str:
    """``text`` with whitespace collapsed, cut to at most ``limit`` characters (``…`` marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _identity(ctx: ToolContext, agent: str) -> MemoryIdentity:
    return MemoryIdentity(ctx.owner, ctx.run_id, ctx.thread_key, agent)


def _runner(ctx: ToolContext) -> FunctionRunner:
    return lambda path, args: ctx.run(path, args, idempotency_key=ctx.idempotency_key)
