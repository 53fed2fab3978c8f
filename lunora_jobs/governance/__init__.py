"""Governance read-model: token usage and estimated cost per actor, tenant, agent, model and UTC day,
summed in the database over the usage ledger (``agent_token_usage``) and its indexes.

Example::

    from lunora_jobs.governance import usage_groups_of
    app.governance.usage(group_by="tenant", since="2026-11-01")   # [UsageGroup(key="acme", ...), ...]
"""

from lunora_jobs.governance.base import GovernanceStore
from lunora_jobs.governance.records import DAY_MS, GROUPS, GroupBy, UsageFilter, UsageGroup, group_order

__all__ = ["DAY_MS", "GROUPS", "GovernanceStore", "GroupBy", "UsageFilter", "UsageGroup", "group_order"]
