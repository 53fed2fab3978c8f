"""The inbound ledger: one row per verified delivery, so a retry never starts a second run and a
finished run's reply is found again after a crash.

``ledger_for(store)`` picks the implementation for the app's store: the ``agent_inbound`` table on a
``SqlStore`` (shared by every ingress replica and worker), a process-local twin on an
``InMemoryStore``.
"""

from channels.ledger.base import (
    CLAIM_STALE_MS,
    Claim,
    InboundLedger,
    PendingReply,
    delivery_key,
)
from channels.ledger.memory import MemoryInboundLedger
from channels.ledger.select import ledger_for
from channels.ledger.sql import SqlInboundLedger

__all__ = [
    "CLAIM_STALE_MS",
    "Claim",
    "InboundLedger",
    "MemoryInboundLedger",
    "PendingReply",
    "SqlInboundLedger",
    "delivery_key",
    "ledger_for",
]
