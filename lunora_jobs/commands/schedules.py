"""``lunora schedules list|cancel``: delayed runs and cron entries in ``agent_schedules``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from lunora_jobs.commands import _common
from lunora_jobs.commands._common import CommandError, DebugOption, JsonOption, UrlOption

NAME = "schedules"
group = typer.Typer(help="Delayed runs and cron entries (agent_schedules).", no_args_is_help=True)



def _row(s: Any) -> dict[str, Any]:
    payload = s.payload if isinstance(s.payload, dict) else {}
    return {
        "id": s.id, "kind": s.kind, "agent": s.agent, "status": s.status,
        "due": _common.iso(s.due_at),
        "timing": payload.get("timing", ""), "attempts": s.attempts, "last_run": s.run_id,
        "last_fired": _common.iso(s.fired_at), "error": s.last_error,
    }


@group.command("list")
def list_schedules(
    status: Annotated[str | None, typer.Option(help="Only this status: pending, claimed, fired, cancelled, "
                                               "failed, orphaned.")] = None,
    agent: Annotated[str | None, typer.Option(help="Only this agent's.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many rows.")] = 100,
    as_json: JsonOption = False, url: UrlOption = None, debug: DebugOption = False,
) -> None:
    """Schedules soonest first: delayed runs (kind once) and cron entries (kind cron, id cron:NAME).

    Example: lunora schedules list --status pending
    """
    with _common.guard(debug):
        rows = _common.open_store(url).list_schedules(status=status, agent=agent, limit=limit)
        _common.emit([_row(s) for s in rows], as_json=as_json, title="schedules (times UTC)",
                     empty="No schedules.")


@group.command("cancel")
def cancel(
    schedule_id: Annotated[str, typer.Argument(help="The schedule id (`lunora schedules list`).")],
    url: UrlOption = None, debug: DebugOption = False,
) -> None:
    """Cancel a pending schedule before it fires (a cancelled cron entry stays off until its timing changes).

    Example: lunora schedules cancel cron:nightly
    """
    with _common.guard(debug):
        store = _common.open_store(url)
        row = store.get_schedule(schedule_id)
        if row is None:
            raise CommandError(f"no schedule {schedule_id!r}", "`lunora schedules list` shows the ids")
        if not store.cancel_schedule(schedule_id):
            raise CommandError(f"schedule {schedule_id!r} is {row.status}, not pending",
                               "only a schedule that has not fired yet can be cancelled")
        typer.echo(f"cancelled {schedule_id} (was due {_common.iso(row.due_at)} UTC)")
