"""The ``InboundLedger`` protocol, its records, and how a store gets its ledger.

A claim is the first write of a delivery: the row keyed by ``delivery_key(dedupe_key)`` is inserted
with a fresh run id, so exactly one of any number of concurrent deliveries (Slack's retry racing the
first attempt, two ingress replicas) wins. The winner starts the run under that id and marks the
row ``started``. A winner that died before that leaves a ``claimed`` row: once it is
``CLAIM_STALE_MS`` old the next redelivery re-claims it with the SAME run id, and starting a run with
an existing id is a no-op — so even that crash never yields two runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

CLAIM_STALE_MS = 30_000
"""How long a ``claimed`` row protects a start in progress before a redelivery may take it over."""


def delivery_key(dedupe_key: str) -> str:
    """The row key of a dedupe key: its SHA-256 in hex (fixed width, whatever the channel's id)."""
    return hashlib.sha256(dedupe_key.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Claim:
    """``claimed``: the caller starts run ``run_id`` now (``retaken``: a stale claim of a start that
    died; the run may exist already). ``duplicate``: another delivery started or is starting it."""

    status: Literal["claimed", "duplicate"]
    run_id: str
    retaken: bool = False


@dataclass(frozen=True, slots=True)
class PendingReply:
    """A delivery whose run ended but whose reply has not been recorded as done."""

    run_id: str
    agent: str
    reply: dict[str, Any]


class InboundLedger(Protocol):
    """Durable dedupe and reply bookkeeping for inbound deliveries."""

    def claim(self, key: str, *, channel: str, agent: str, run_id: str, reply: dict[str, Any] | None,
              now: int) -> Claim:
        """Claim delivery ``key`` for a new run ``run_id`` (see the module docstring)."""
        ...

    def started(self, key: str, now: int) -> None:
        """The claimed run was started: later deliveries are duplicates for good."""
        ...

    def release(self, key: str) -> None:
        """The start failed: let the next delivery re-claim at once (with the same run id)."""
        ...

    def reply_for(self, run_id: str) -> dict[str, Any] | None:
        """Where run ``run_id``'s answer goes (a ``ReplyTarget`` JSON), or None."""
        ...

    def reply_done(self, run_id: str, now: int) -> None:
        """The run's reply step finished (delivered, or given up): nothing is pending any more."""
        ...

    def pending_replies(self, ended_before: int, limit: int) -> Sequence[PendingReply]:
        """Replies still pending for runs that ended (completed/failed/cancelled) before
        ``ended_before`` (epoch-ms), oldest first."""
        ...
