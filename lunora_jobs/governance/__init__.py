"""Governance read-model: token usage and estimated cost per actor, tenant, agent, model and UTC day,
summed in the database over the usage ledger (``agent_token_usage``) and its indexes.

Example::

    from lunora_jobs.governance import Quota
    app.governance.usage(group_by="tenant", since="2026-11-01")   # [UsageGroup(key="acme", ...), ...]
    app = Lunora(agents, quotas=[Quota("tenant", tokens=1_000_000)])  # per tenant and UTC day
    app.governance.quota_status(tenant="acme")                     # [QuotaStatus(...)]
"""

from lunora_jobs.governance.base import GovernanceStore
from lunora_jobs.governance.policy import QuotaPolicy
from lunora_jobs.governance.quotas import SCOPES, Quota, QuotaScope, QuotaStatus, QuotaWindow, checked_quotas
from lunora_jobs.governance.records import DAY_MS, GROUPS, GroupBy, UsageFilter, UsageGroup, group_order

__all__ = [
    "DAY_MS", "GROUPS", "SCOPES", "GovernanceStore", "GroupBy", "Quota", "QuotaPolicy", "QuotaScope",
    "QuotaStatus", "QuotaWindow", "UsageFilter", "UsageGroup", "checked_quotas", "group_order",
]
