"""``Rag.as_tool()``: retrieval as an agent tool, so the model decides when to search.

``rag`` does not import the agent runtime, so the tool is a plain ``RagTool``: a name, a
description, a JSON input schema and ``execute(input)``. ``define_agent(tools=[...])`` accepts any
object of that shape. Example::

    search_docs = docs.bind(auth=user).as_tool(name="search_docs", namespace="acme", top_k=5)
    agent = define_agent(name="support", tools=[search_docs], ...)
    search_docs.execute({"query": "refund policy"})     # {"context": "...", "sources": [...]}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rag.retrieval import RetrievalResult

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": "What to search for, as a self-contained query.",
        }
    },
    "required": ["query"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class RagTool:
    """A search tool over one rag: ``execute({"query": str}[, ctx])`` -> ``{"context", "sources"}``."""

    name: str
    description: str
    execute: Callable[..., dict[str, Any]]
    input_schema: dict[str, Any] = field(default_factory=lambda: dict(INPUT_SCHEMA))


def rag_tool(
    search: Callable[[str], RetrievalResult],
    *,
    index: str,
    name: str = "search_docs",
    description: str | None = None,
) -> RagTool:
    """A ``RagTool`` around ``search(query)`` (``Rag.as_tool`` fixes namespace, top_k and filter in it)."""

    def execute(input: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        result = search(input["query"])
        return {
            "context": result.context,
            "sources": [{"id": s.id, "metadata": s.metadata} for s in result.sources],
        }

    execute.__name__ = name
    return RagTool(
        name=name,
        description=description or f"Search the {index!r} knowledge base and return relevant passages.",
        execute=execute,
    )
