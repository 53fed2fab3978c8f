"""``lunora approve THREAD CALL_ID``: decide a tool call waiting for approval, as the operator."""

from __future__ import annotations

from typing import Annotated

import typer

from lunora_jobs.commands._common import DebugOption, guard, open_app


def register(app: typer.Typer) -> None:
    """Add ``lunora approve`` to ``app``."""
    app.command("approve")(approve)


def approve(
    thread: Annotated[str, typer.Argument(help="The thread key the run waits on.")],
    call_id: Annotated[str, typer.Argument(help="The tool call id (`lunora run --follow` prints it).")],
    reject: Annotated[bool, typer.Option("--reject", help="Reject instead: the model is told and recovers.")]
    = False,
    reason: Annotated[str | None, typer.Option(help="Why (shown to the model on a rejection).")] = None,
    debug: DebugOption = False,
) -> None:
    """Approve (the tool runs) or --reject a pending tool call; the run then continues on the workers.

    Example: LUNORA_APP=myproject.agents:app lunora approve t-42 call_1 --reject --reason "too much"
    """
    with guard(debug):
        lunora = open_app()
        outcome = lunora.approvals.resolve(thread, call_id, approve=not reject, reason=reason, trusted=True,
                                           viewer="operator")
        verb = "rejected" if reject else "approved"
        typer.echo(f"{verb} {call_id} on thread {thread}" if outcome == "applied"
                   else f"{call_id} on thread {thread} was already {verb}; nothing changed")
