"""Query transformation: rewrite a query, or expand it into several searched separately and fused.

The transformer is injected (it usually needs a language model): ``transform(query, context)`` returns a
string (a rewrite) or a list of strings (multi-query). Anything unusable -- ``None``, an empty string,
an empty list, only blanks -- falls back to the original query rather than searching for nothing.

Example::

    def follow_up(query: str, ctx: TransformContext) -> str:
        return llm(f"Rewrite as a standalone search query (thread {ctx.conversation_id}): {query}")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TransformContext:
    """What a query transformer may use besides the query."""

    conversation_id: str | None = None
    namespace: str | None = None


QueryTransform = Callable[[str, TransformContext], "str | list[str] | None"]


def transformed_queries(query: str, transform: QueryTransform | None, context: TransformContext) -> list[str]:
    """The queries to search: the transformer's usable output (deduplicated, in order) or ``[query]``."""
    if transform is None:
        return [query]
    result: Any = transform(query, context)
    candidates = [result] if isinstance(result, str) else list(result or [])
    out: list[str] = []
    for candidate in candidates:
        if isinstance(candidate, str) and candidate.strip() and candidate.strip() not in out:
            out.append(candidate.strip())
    return out or [query]
