"""Who a memory read or write is for: the run's verified identity, never anything the model typed.

The owner comes from the run row, which the engine wrote from what the caller proved (the API's
authenticated identity, a signature-checked ingress request, the app acting as the system). Every
memory tier scopes by it: semantic sources get it as the ``auth`` of ``rag.bind(auth=...)`` (so an
``rls_filter`` confines every search), graph and episodic rows are keyed by it. A run without an
owner is anonymous: an ``rls_filter`` refuses it, and the owner-keyed tiers skip it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class MemoryIdentity:
    """The verified identity of one run, as the memory tiers see it."""

    owner: str | None
    run_id: str
    thread_key: str
    agent: str

    @property
    def anonymous(self) -> bool:
        """True when the run has no owner (None or empty): owner-keyed tiers skip it."""
        return not self.owner

    def auth(self) -> dict[str, Any] | None:
        """What a rag source is bound with: ``{"owner": owner}``, or None for an anonymous run (an
        index with an ``rls_filter`` then refuses the read: it fails closed)."""
        return None if self.anonymous else {"owner": self.owner}
