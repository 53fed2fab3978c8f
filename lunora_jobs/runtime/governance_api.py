"""``app.governance``: token usage and estimated cost per actor, tenant, agent, model or UTC day.

Server-side code calls it for whoever it has authorized (an operator console, a tenant's own billing
page with ``tenant=`` fixed to the caller's verified tenant); it does no access check of its own.
"""

from __future__ import annotations

from collections.abc import Callable

from lunora_jobs.errors import ConfigurationError
from lunora_jobs.governance import (
    GROUPS,
    GovernanceStore,
    GroupBy,
    Quota,
    QuotaPolicy,
    QuotaStatus,
    UsageFilter,
    UsageGroup,
)
from lunora_jobs.pricing import When, to_ms
from lunora_jobs.store.base import AgentStore


class GovernanceAPI:
    """Example::

        app.governance.usage("tenant", since="2026-11-01")          # [UsageGroup(key="acme", ...), ...]
        app.governance.usage("day", since="2026-11-01", actor="u7")  # u7's spend per UTC day
        app.governance.usage(tenant="acme")                          # [one total], or [] without usage
        app.governance.quota_status(actor="u7", tenant="acme")       # [QuotaStatus(...)] per quota
    """

    def __init__(self, store: AgentStore, now: Callable[[], int], quotas: QuotaPolicy | None = None) -> None:
        self._store = store
        self._now = now
        self._quotas = quotas

    @property
    def quotas(self) -> tuple[Quota, ...]:
        """The app's quotas (``Lunora(quotas=[...])``); empty: nothing is limited."""
        return () if self._quotas is None else self._quotas.quotas

    def quota_status(self, *, actor: str | None = None, tenant: str | None = None) -> list[QuotaStatus]:
        """Where ``actor`` and ``tenant`` stand against every quota that binds them (its own, else the
        default one of its scope; per window), read in one query on the store's clock. Empty when no
        quota binds them. ``QuotaUnavailableError`` when the usage cannot be read."""
        if actor is None and tenant is None:
            raise ConfigurationError("quota_status() needs actor=... or tenant=... (or both).")
        if self._quotas is None:
            return []
        return self._quotas.status(actor=actor, tenant=tenant)

    def usage(
        self, group_by: GroupBy | None = None, *, since: When = 0, until: When = None,
        actor: str | None = None, tenant: str | None = None, agent: str | None = None,
        model: str | None = None,
    ) -> list[UsageGroup]:
        """Sums over the usage rows with ``since <= created_at < until`` (default: all of it, up to
        now), grouped by ``group_by`` (``actor`` | ``tenant`` | ``agent`` | ``model`` | ``day``; None:
        one total) and narrowed by the filters. Costs: see ``UsageGroup.cost_usd``."""
        if group_by is not None and group_by not in GROUPS:
            raise ConfigurationError(f"group_by={group_by!r}; use one of {', '.join(GROUPS)} or None.")
        now = self._now()
        start = to_ms(since, now)
        end = now + 1 if until is None else to_ms(until, now)
        where = UsageFilter(actor=actor, tenant=tenant, agent=agent, model=model)
        return self.store.usage_groups(group_by, start, end, where)

    @property
    def store(self) -> GovernanceStore:
        """The store's ``GovernanceStore`` capability (``SqlStore`` and ``InMemoryStore`` have it)."""
        return governance_store(self._store)


def governance_store(store: AgentStore) -> GovernanceStore:
    """``store`` as a ``GovernanceStore``, or ``ConfigurationError`` for a store without the capability."""
    if not isinstance(store, GovernanceStore):
        raise ConfigurationError(
            f"{type(store).__name__} has no usage read-model (needed by app.governance and quotas); use "
            "SqlStore or InMemoryStore, or implement lunora_jobs.governance.GovernanceStore on your store."
        )
    return store
