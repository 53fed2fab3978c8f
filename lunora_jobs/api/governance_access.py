"""Who may read which usage and quotas: the identity alone decides (never a query parameter).

- the operator (an admin without a tenant) reads everything, narrowed by what it asks;
- a tenant's admin reads its tenant's usage (every actor in it);
- anyone else reads only their own usage (within their tenant when they have one);
- everyone reads their own quota and their own tenant's quota (whether new runs will be refused).

An actor's quota counts that actor's usage in every tenant, so only the operator and the actor
itself may read it. Asking for another actor or tenant is refused (403), never silently widened.
"""

from __future__ import annotations

from dataclasses import dataclass

from lunora_jobs.api.auth.base import Identity
from lunora_jobs.api.problems import ProblemError


@dataclass(frozen=True, slots=True)
class Narrowed:
    """The actor and tenant a request may read, after the identity's rules."""

    actor: str | None
    tenant: str | None


def _refuse(what: str) -> ProblemError:
    return ProblemError(403, "forbidden", f"your identity may not read {what}; ask for your own.")


def _tenant_of(who: Identity, tenant: str | None) -> str | None:
    """Anyone but the operator reads inside its own tenant (or none, without one)."""
    if tenant is not None and tenant != who.tenant:
        raise _refuse(f"tenant {tenant!r}")
    return who.tenant


def usage_scope(who: Identity, actor: str | None, tenant: str | None) -> Narrowed:
    """The filters a usage read runs with for ``who``."""
    if who.admin and who.tenant is None:
        return Narrowed(actor, tenant)
    narrowed_tenant = _tenant_of(who, tenant)
    if who.admin:  # a tenant's admin: every actor, inside the tenant
        return Narrowed(actor, narrowed_tenant)
    if actor is not None and actor != who.subject:
        raise _refuse(f"the usage of {actor!r}")
    return Narrowed(who.subject, narrowed_tenant)


def quota_scope(who: Identity, actor: str | None, tenant: str | None) -> Narrowed:
    """The actor and tenant a quota read may name for ``who`` (default: itself and its tenant)."""
    if actor is None and tenant is None:
        return Narrowed(who.subject, who.tenant)
    if who.admin and who.tenant is None:
        return Narrowed(actor, tenant)
    if actor is not None and actor != who.subject:
        raise _refuse(f"the quota of {actor!r}")
    if tenant is not None and tenant != who.tenant:  # its own tenant's quota: members may see it
        raise _refuse(f"the quota of tenant {tenant!r}")
    return Narrowed(actor, tenant)
