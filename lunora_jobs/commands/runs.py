"""``lunora runs list|show|cancel|retry``: the runs in the database and each one's step timeline."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from lunora_jobs.commands._common import (
    CommandError,
    DebugOption,
    JsonOption,
    UrlOption,
    emit,
    guard,
    iso,
    open_app,
    open_store,
)

NAME = "runs"
group = typer.Typer(help="Runs: list them, show one's step timeline, cancel one, retry a failed one.",
                    no_args_is_help=True)



@group.command("list")
def list_runs(
    status: Annotated[str | None, typer.Option(help="Only this status: queued, running, awaiting_input, "
                                               "completed, failed, cancelled.")] = None,
    agent: Annotated[str | None, typer.Option(help="Only this agent's runs.")] = None,
    owner: Annotated[str | None, typer.Option(help="Only this owner's runs.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many rows, newest first.")] = 20,
    as_json: JsonOption = False, url: UrlOption = None, debug: DebugOption = False,
) -> None:
    """The newest runs first, with their thread, status, turns and tokens.

    Example: lunora runs list --status failed --limit 5
    """
    with guard(debug):
        rows = open_store(url).page_runs(owner=owner, status=status, agent=agent, limit=limit)
        emit([
            {"id": r.id, "agent": r.agent, "status": r.status, "stopped": r.stopped, "thread": r.thread_key,
             "owner": r.owner, "turns": r.turns, "tokens": r.input_tokens + r.output_tokens,
             "updated": iso(r.updated_at)}
            for r in rows
        ], as_json=as_json, title="runs (times UTC)", empty="No runs.")


def _step_row(step: Any) -> dict[str, Any]:
    return {
        "step": step.name, "status": step.status, "attempt": step.attempt, "started": iso(step.created_at),
        "took_ms": step.updated_at - step.created_at if step.status == "completed" else None,
        "error": step.error,
    }


@group.command("show")
def show(
    run_id: Annotated[str, typer.Argument(help="The run id (`lunora runs list`).")],
    as_json: JsonOption = False, url: UrlOption = None, debug: DebugOption = False,
) -> None:
    """One run and its step timeline: every LLM turn, tool call and approval wait, in order.

    Example: lunora runs show 3f2a...
    """
    with guard(debug):
        store = open_store(url)
        run = store.get_run(run_id)
        if run is None:
            raise CommandError(f"no run {run_id!r}", "`lunora runs list` shows the run ids")
        thread = store.get_thread_by_id(run.thread_id)
        summary = {
            "id": run.id, "agent": run.agent, "status": run.status, "stopped": run.stopped,
            "thread": None if thread is None else thread.key, "owner": run.owner, "turns": run.turns,
            "input_tokens": run.input_tokens, "output_tokens": run.output_tokens,
            "created": iso(run.created_at), "updated": iso(run.updated_at), "error": run.error,
        }
        steps = [_step_row(s) for s in store.list_steps(run_id)]
        if as_json:
            emit([{**summary, "steps": steps}], as_json=True, title="", empty="")
            return
        for key, value in summary.items():
            if value not in (None, ""):
                typer.echo(f"{key:>13}: {value}")
        emit(steps, as_json=False, title="step timeline (UTC)", empty="No steps yet.")


@group.command("cancel")
def cancel(
    run_id: Annotated[str, typer.Argument(help="The run id (`lunora runs list`).")],
    debug: DebugOption = False,
) -> None:
    """Cancel a run: its thread becomes cancelled and its queued tasks are revoked. Needs LUNORA_APP.

    Example: LUNORA_APP=myproject.agents:app lunora runs cancel 3f2a...
    """
    from lunora_jobs.engine.cancel import cancel_run

    with guard(debug):
        app = open_app()
        run = app.store.get_run(run_id)
        if run is None:
            raise CommandError(f"no run {run_id!r}", "`lunora runs list` shows the run ids")
        if cancel_run(app.deps, run_id):
            typer.echo(f"cancelled run {run_id} (was {run.status})")
        else:
            typer.echo(f"run {run_id} had already ended ({run.status}); nothing to cancel")


@group.command("retry")
def retry(
    run_id: Annotated[str, typer.Argument(help="The failed run's id (`lunora runs list --status failed`).")],
    debug: DebugOption = False,
) -> None:
    """Resume a failed run from the step it failed at: completed steps are not run again. Needs LUNORA_APP.

    Example: LUNORA_APP=myproject.agents:app lunora runs retry 3f2a...
    """
    from lunora_jobs.errors import ConflictError, NotFoundError

    with guard(debug):
        app = open_app()
        try:
            steps = app.runs.retry(run_id, trusted=True)  # the operator's CLI: no owner gate
        except NotFoundError:
            raise CommandError(f"no run {run_id!r}", "`lunora runs list` shows the run ids") from None
        except ConflictError as exc:
            raise CommandError(str(exc), "`lunora runs show RUN_ID` shows its status") from None
        fresh = ", ".join(steps) if steps else "none (it failed between steps)"
        typer.echo(f"retrying run {run_id}: fresh attempts for {fresh}")
