"""The memory kind: ``memory:*`` steps (run-start retrieval, post-run extraction).

The memory tiers are not built yet: plan never dispatches these steps, and a delivered one records
an empty result so nothing waits on it. The memory engineer replaces ``work`` (and adds ``replan``
when a memory step precedes turn 0) — the pipeline needs no change for it.
"""

from __future__ import annotations

from lunora_jobs.engine.kinds.base import StepKind
from lunora_jobs.engine.steps import MEMORY_PREFIX


class MemoryStep(StepKind):
    """``memory:<what>``: recorded with an empty result for now."""

    name, prefix, route = "memory", MEMORY_PREFIX, "memory"
