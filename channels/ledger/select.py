"""``ledger_for``: the inbound ledger that lives next to an app's store."""

from __future__ import annotations

import weakref
from typing import Any

from channels.ledger.base import InboundLedger
from channels.ledger.memory import MemoryInboundLedger
from channels.ledger.sql import SqlInboundLedger
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.store import InMemoryStore
from lunora_jobs.store.sql import SqlStore

_LEDGERS: weakref.WeakKeyDictionary[Any, InboundLedger] = weakref.WeakKeyDictionary()


def ledger_for(store: Any) -> InboundLedger:
    """``agent_inbound`` for a ``SqlStore``; for an ``InMemoryStore``, a process-local ledger
    (one per store, as durable as the store itself)."""
    if not isinstance(store, SqlStore | InMemoryStore):
        raise ConfigurationError(
            f"{type(store).__name__} keeps no inbound ledger; serve channels on SqlStore or InMemoryStore."
        )
    found = _LEDGERS.get(store)
    if found is None:
        found = SqlInboundLedger(store) if isinstance(store, SqlStore) else MemoryInboundLedger(store)
        _LEDGERS[store] = found
    return found
