"""``Rag.as_tool()``: retrieval as an agent tool, so the model decides when to search.

Returns a ``lunora_jobs.tools.ToolDefinition``; the tool's result is the prompt-ready context and
the cited sources. Example::

    search_docs = docs.bind(auth=user).as_tool(name="search_docs", namespace="acme", top_k=5)
    agent = define_agent(name="support", tools=[search_docs], ...)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lunora_jobs.tools import ToolDefinition, define_tool

if TYPE_CHECKING:
    from rag.define import Rag

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to search for, as a self-contained query."}
    },
    "required": ["query"],
    "additionalProperties": False,
}


def rag_tool(
    rag: Rag,
    *,
    name: str = "search_docs",
    description: str | None = None,
    namespace: str | None = None,
    top_k: int | None = None,
    filter: dict[str, Any] | None = None,
) -> ToolDefinition:
    """A tool taking ``{"query": str}`` and returning ``{"context": str, "sources": [...]}``.

    The namespace and filter are fixed here, by the server, never chosen by the model; the bound
    rag's ``rls_filter`` still applies on top.
    """

    rag.namespace(namespace)  # a multi-tenant rag refuses a namespace-less tool now, not at the first call

    def execute(input: dict[str, Any]) -> dict[str, Any]:
        result = rag.retrieve(input["query"], namespace=namespace, top_k=top_k, filter=filter)
        return {
            "context": result.context,
            "sources": [{"id": s.id, "metadata": s.metadata} for s in result.sources],
        }

    execute.__name__ = name
    return define_tool(
        name,
        description=description
        or f"Search the {rag.config.index!r} knowledge base and return relevant passages.",
        input_schema=INPUT_SCHEMA,
        execute=execute,
    )
