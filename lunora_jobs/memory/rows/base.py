"""``MemoryRows``: the memory tiers' storage, beside the agent store on the same database.

Episodes live in ``agent_episodes`` (one per run: ``run_id`` is unique, so a write repeated after a
crash inserts nothing), keyed by owner. Every write prunes the owner's rows to the declared bounds in
the same call, so what one owner's memory costs is bounded by its options, never by its history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


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

    def stalled_writes(self, names: Sequence[str], now: int, limit: int) -> list[tuple[str, str]]:
        """``(run_id, step)`` of post-run memory steps named in ``names`` that were claimed and are
        no longer worked on (the lease expired: a killed worker, a released failed attempt)."""
        ...
