"""Inject mode: what a run-start read searches for, and how its context reaches every turn's prompt.

The reads ran once at run start (``memory:retrieve`` and a skill's ``memory:retrieve:<skill>``) and
their contexts are in their ledger rows; each turn appends them to the system instructions::

    <instructions>

    Relevant context from memory:
    <the memory:retrieve context>

    Relevant context from the 'billing' skill's knowledge:
    <the memory:retrieve:billing context>

Only recorded results are used: a turn never searches, so every replay builds the same prompt.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from lunora_jobs.memory.options import MemoryOption


def run_query(value: Any) -> str:
    """The search query of a run-start read: the run's input as text (non-strings as JSON)."""
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def with_memory(
    instructions: str | None, memories: Sequence[MemoryOption], recorded: Mapping[str, Any]
) -> str | None:
    """``instructions`` followed by the recorded context of each run-start read (``recorded``: step
    name -> the step's memo), under the memory's heading; unchanged when there is nothing to add."""
    blocks = []
    for memory in memories:
        memo = recorded.get(memory.read_step or "")
        context = memo.get("context") if isinstance(memo, Mapping) else None
        if context:
            blocks.append(f"{memory.heading}\n{context}")
    if not blocks:
        return instructions
    return "\n\n".join([instructions, *blocks] if instructions else blocks)
