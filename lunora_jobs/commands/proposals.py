"""``lunora proposals list|show|approve|reject``: the action proposals of independent-mode agents, read
and decided as ``--actor`` (the app's ``authorize_action`` hook decides what that actor may do)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from lunora_jobs.commands import _common
from lunora_jobs.commands._common import DebugOption, JsonOption

if TYPE_CHECKING:
    from lunora_jobs.store.proposals import DecisionFilter

DECISIONS = ("pending", "approved", "rejected", "expired")

NAME = "proposals"
group = typer.Typer(help="Action proposals of independent-mode agents.", no_args_is_help=True)

Thread = Annotated[str, typer.Argument(help="The thread key the proposal was filed on.")]
ProposalId = Annotated[str, typer.Argument(help="The proposal id (`lunora proposals list` prints it).")]
Actor = Annotated[str, typer.Option(help="Who acts: authorized by the app's authorize_action hook.")]
Tenant = Annotated[str | None, typer.Option(help="The tenant the proposal belongs to (its run's).")]
Reason = Annotated[str | None, typer.Option(help="Why (posted to the thread with the decision).")]


def _row(p: Any) -> dict[str, Any]:
    return {"id": p.id, "tool": p.tool_name, "input": p.input, "status": p.status, "decision": p.decision,
            "decided by": p.decided_by, "created (UTC)": _common.iso(p.created_at),
            "expires (UTC)": _common.iso(p.expires_at), "error": p.error}


@group.command("list")
def list_proposals(
    thread: Thread, actor: Actor, tenant: Tenant = None,
    decision: Annotated[str | None, typer.Option(help="Only pending, approved, rejected or expired.")] = None,
    as_json: JsonOption = False, debug: DebugOption = False,
) -> None:
    """The thread's proposals ACTOR may act on, oldest first.

    Example: LUNORA_APP=myproject.agents:app lunora proposals list t-42 --actor u7 --decision pending
    """
    with _common.guard(debug):
        if decision not in (None, *DECISIONS):
            raise _common.CommandError(f"--decision {decision!r}", f"use one of {', '.join(DECISIONS)}")
        found = _common.open_app().proposals.list(thread, actor=actor, tenant=tenant,
                                                  decision=cast("DecisionFilter | None", decision))
        _common.emit([_row(p) for p in found], as_json=as_json, title=f"proposals on {thread}",
                     empty="No proposals this actor may act on.")


@group.command("show")
def show(thread: Thread, proposal_id: ProposalId, actor: Actor, tenant: Tenant = None,
         as_json: JsonOption = False, debug: DebugOption = False) -> None:
    """One proposal with its input, decision and outcome.

    Example: lunora proposals show t-42 3f9c... --actor u7
    """
    with _common.guard(debug):
        p = _common.open_app().proposals.get(thread, proposal_id, actor=actor, tenant=tenant)
        row = {**_row(p), "reason": p.decision_reason, "result": p.result}
        _common.emit([row], as_json=as_json, title=f"proposal {p.id}", empty="")


def _decide(thread: str, proposal_id: str, approve: bool, actor: str, tenant: str | None,
            reason: str | None) -> None:
    outcome = _common.open_app().proposals.decide(thread, proposal_id, approve=approve, actor=actor,
                                                  tenant=tenant, reason=reason)
    verb = "approved" if approve else "rejected"
    typer.echo(f"{verb} {proposal_id} on thread {thread}" if outcome == "applied"
               else f"{proposal_id} on thread {thread} was already {verb}; nothing changed")


@group.command("approve")
def approve(thread: Thread, proposal_id: ProposalId, actor: Actor, tenant: Tenant = None,
            reason: Reason = None, debug: DebugOption = False) -> None:
    """Approve: a worker runs the action once and posts its outcome to the thread.

    Example: LUNORA_APP=myproject.agents:app lunora proposals approve t-42 3f9c... --actor u7
    """
    with _common.guard(debug):
        _decide(thread, proposal_id, True, actor, tenant, reason)


@group.command("reject")
def reject(thread: Thread, proposal_id: ProposalId, actor: Actor, tenant: Tenant = None,
           reason: Reason = None, debug: DebugOption = False) -> None:
    """Reject: the action never runs; the thread is told.

    Example: lunora proposals reject t-42 3f9c... --actor u7 --reason "not this month"
    """
    with _common.guard(debug):
        _decide(thread, proposal_id, False, actor, tenant, reason)
