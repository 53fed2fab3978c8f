"""``lunora governance usage|quota``: usage sums and quota statuses of the app named by ``LUNORA_APP``
(its store, and the quotas it declares)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from lunora_jobs.commands import _common
from lunora_jobs.commands._common import DebugOption, JsonOption
from lunora_jobs.governance import GROUPS

if TYPE_CHECKING:
    from lunora_jobs.governance import GroupBy

NAME = "governance"
group = typer.Typer(help="Token usage, estimated cost and quotas per actor, tenant, agent, model, day.",
                    no_args_is_help=True)

Who = Annotated[str | None, typer.Option(help="Only this actor (a run's owner).")]
Tenant = Annotated[str | None, typer.Option(help="Only this tenant.")]


def _usage_row(group_by: str | None, g: Any) -> dict[str, Any]:
    key = _common.iso(g.key)[:10] if group_by == "day" else g.key
    return {group_by or "total": "" if key is None else key, "rows": g.rows, "input": g.input_tokens,
            "output": g.output_tokens, "total tokens": g.total_tokens,
            "cost usd": "" if g.cost_usd is None else f"{g.cost_usd:.6f}", "unpriced rows": g.unpriced_rows}


def _quota_row(s: Any) -> dict[str, Any]:
    q = s.quota
    return {
        "scope": q.scope, "key": s.key, "window": "UTC day" if q.window == "day" else f"{q.window} s",
        "tokens": f"{s.tokens_used}" + ("" if q.tokens is None else f" / {q.tokens}"),
        "cost usd": ("" if s.cost_used_usd is None else f"{s.cost_used_usd:.6f}")
        + ("" if q.cost_usd is None else f" / {q.cost_usd:g}"),
        "exceeded": "yes" if s.exceeded else "no", "resets (UTC)": _common.iso(s.resets_at_ms),
    }


@group.command("usage")
def usage(
    by: Annotated[str | None, typer.Option("--by", help="Group by actor, tenant, agent, model, day.")] = None,
    since: Annotated[str | None, typer.Option(help="From this ISO date or time (UTC).")] = None,
    until: Annotated[str | None, typer.Option(help="Up to (not including) this ISO date or time.")] = None,
    actor: Who = None, tenant: Tenant = None,
    agent: Annotated[str | None, typer.Option(help="Only this agent's.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model's.")] = None,
    as_json: JsonOption = False, debug: DebugOption = False,
) -> None:
    """Tokens and estimated cost summed over the usage ledger (cost empty: no row had a price).

    Example: LUNORA_APP=myproject.agents:app lunora governance usage --by tenant --since 2026-11-01
    """
    with _common.guard(debug):
        if by is not None and by not in GROUPS:
            raise _common.CommandError(f"--by {by!r}", f"use one of {', '.join(GROUPS)}")
        app = _common.open_app()
        groups = app.governance.usage(cast("GroupBy | None", by), since=since or 0, until=until, actor=actor,
                                      tenant=tenant, agent=agent, model=model)
        rows = [_usage_row(by, g) for g in groups]
        if as_json:
            rows = [{"key": g.key, "rows": g.rows, "input_tokens": g.input_tokens,
                     "output_tokens": g.output_tokens, "cache_read_tokens": g.cache_read_tokens,
                     "cache_write_tokens": g.cache_write_tokens, "cost_usd": g.cost_usd,
                     "unpriced_rows": g.unpriced_rows} for g in groups]
        _common.emit(rows, as_json=as_json, title=f"usage by {by or 'total'}", empty="No usage recorded.")


@group.command("quota")
def quota(
    actor: Who = None, tenant: Tenant = None, as_json: JsonOption = False, debug: DebugOption = False,
) -> None:
    """Where an actor and / or a tenant stand against the app's quotas (exceeded: runs are refused).

    Example: LUNORA_APP=myproject.agents:app lunora governance quota --actor u7 --tenant acme
    """
    with _common.guard(debug):
        if actor is None and tenant is None:
            raise _common.CommandError("name whose quota to show", "pass --actor NAME and/or --tenant NAME")
        app = _common.open_app()
        if not app.governance.quotas:
            raise _common.CommandError("the app declares no quotas",
                                       "pass quotas=[Quota(...)] to Lunora(...) in the app LUNORA_APP names")
        statuses = app.governance.quota_status(actor=actor, tenant=tenant)
        rows = [_quota_row(s) for s in statuses]
        if as_json:
            rows = [{"scope": s.scope, "key": s.key, "window": s.quota.window, "tokens_limit": s.quota.tokens,
                     "cost_limit_usd": s.quota.cost_usd, "tokens_used": s.tokens_used,
                     "cost_used_usd": s.cost_used_usd, "unpriced_rows": s.unpriced_rows,
                     "resets_at_ms": s.resets_at_ms, "exceeded": s.exceeded} for s in statuses]
        _common.emit(rows, as_json=as_json, title="quotas", empty="No quota binds them.")
