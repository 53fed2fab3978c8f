"""Storage of the memory tiers: ``rows_for(store)`` is the ``MemoryRows`` beside an agent store."""

from __future__ import annotations

import threading
import weakref

from lunora_jobs.memory.rows.base import MemoryRows
from lunora_jobs.memory.rows.local import LocalMemoryRows
from lunora_jobs.memory.rows.sql import SqlMemoryRows
from lunora_jobs.store.base import AgentStore

__all__ = ["LocalMemoryRows", "MemoryRows", "SqlMemoryRows", "rows_for"]

_ROWS: weakref.WeakKeyDictionary[AgentStore, MemoryRows] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def rows_for(store: AgentStore) -> MemoryRows:
    """The memory rows on ``store``'s database (``SqlStore``: its engine), one per store object."""
    with _LOCK:
        rows = _ROWS.get(store)
        if rows is None:
            engine = getattr(store, "engine", None)
            if engine is not None:
                store.ensure_tables()  # once per store object: its own tables are created lazily
                rows = SqlMemoryRows(engine)
            else:
                rows = LocalMemoryRows(store)
            _ROWS[store] = rows
        return rows
