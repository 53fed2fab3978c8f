"""``QuotaPolicy``: the app's quotas evaluated against the usage ledger, on the store's clock.

One check is ONE aggregate query whatever the number of quotas: every window that applies to the
run's actor and tenant is a conditional sum of the same SELECT (``GovernanceStore.quota_usage``). The
engine asks it at a run's start and before every model turn; an app without quotas has no policy, so
neither costs anything then. A check that cannot read the usage raises ``QuotaUnavailableError``:
quotas fail closed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lunora_jobs.errors import QuotaExceededError, QuotaUnavailableError
from lunora_jobs.governance.base import GovernanceStore
from lunora_jobs.governance.quotas import Quota, QuotaStatus, QuotaWindow
from lunora_jobs.governance.records import DAY_MS


class QuotaPolicy:
    """Example::

        policy = QuotaPolicy([Quota("actor", tokens=1000)], store, clock)
        policy.status(actor="u7")          # [QuotaStatus(...)]
        policy.enforce("u7", "acme")       # raises QuotaExceededError at the limit
    """

    def __init__(self, quotas: Sequence[Quota], store: GovernanceStore, now: Callable[[], int]) -> None:
        self.quotas = tuple(quotas)
        self._store = store
        self._now = now

    def applying(self, scope: str, key: str) -> list[Quota]:
        """The quotas that bind ``key`` in ``scope``: per window, its own quota, else the default one."""
        own = {q.window: q for q in self.quotas if q.scope == scope and q.key == key}
        default = {q.window: q for q in self.quotas if q.scope == scope and q.key is None}
        return list({**default, **own}.values())

    def status(self, *, actor: str | None = None, tenant: str | None = None) -> list[QuotaStatus]:
        """Where ``actor`` and ``tenant`` stand against each quota that binds them (one query; none
        when no quota binds them). ``QuotaUnavailableError`` when the usage cannot be read."""
        bound = [(quota, key) for scope, key in (("actor", actor), ("tenant", tenant)) if key is not None
                 for quota in self.applying(scope, key)]
        if not bound:
            return []
        now = self._now()
        day_start = now - now % DAY_MS
        windows = [
            QuotaWindow(quota.scope, key, day_start if quota.window_ms is None else now - quota.window_ms)
            for quota, key in bound
        ]
        try:
            sums = self._store.quota_usage(windows, now + 1)
        except Exception as exc:  # fail closed: no reading, no run
            raise QuotaUnavailableError(
                f"quotas are configured but the usage could not be read ({type(exc).__name__}: {exc}); "
                "the run does not proceed. Check the database (lunora doctor) and retry."
            ) from exc
        return [
            QuotaStatus(quota, key, window.start_ms, now + 1,
                        day_start + DAY_MS if quota.window_ms is None else None,
                        total.total_tokens, total.cost_usd, total.unpriced_rows)
            for (quota, key), window, total in zip(bound, windows, sums, strict=True)
        ]

    def enforce(self, actor: str | None, tenant: str | None) -> None:
        """Raise ``QuotaExceededError`` when ``actor`` or ``tenant`` is at a limit (or
        ``QuotaUnavailableError`` when that cannot be known)."""
        exceeded = tuple(s for s in self.status(actor=actor, tenant=tenant) if s.exceeded)
        if exceeded:
            raise QuotaExceededError(
                "over quota: " + "; ".join(s.describe() for s in exceeded)
                + ". Wait for the window to reset, or raise the quota.",
                statuses=exceeded,
            )
