"""``InMemoryStore``: the single-process, non-durable twin of ``SqlStore`` (same protocols, same
contract suites), for tests and scratch apps.

Example::

    from lunora_jobs.store.memory import InMemoryStore
    store = InMemoryStore(clock=lambda: 1_700_000_000_000)
"""

from lunora_jobs.store.memory._proposals import InMemoryProposalStore
from lunora_jobs.store.memory._store import InMemoryStore

__all__ = ["InMemoryProposalStore", "InMemoryStore"]
