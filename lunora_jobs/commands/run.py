"""``lunora run AGENT "input"``: start a run of an agent of the app named by ``LUNORA_APP``."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from lunora_jobs.commands._common import CommandError, DebugOption, JsonOption, guard, open_app


def register(app: typer.Typer) -> None:
    """Add ``lunora run`` to ``app``."""
    app.command("run")(run)


def run(
    agent: Annotated[str, typer.Argument(help="The agent's name, as declared in the app.")],
    input: Annotated[str, typer.Argument(help="The run's input (the user message).")],
    thread: Annotated[str | None, typer.Option("--thread", help="Thread key: continue this thread.")] = None,
    owner: Annotated[str | None, typer.Option("--owner", help="The thread's owner.")] = None,
    follow: Annotated[bool, typer.Option("--follow", help="Print the thread live until the run ends or "
                                         "waits for an approval.")] = False,
    timeout: Annotated[float, typer.Option(help="With --follow: give up after this many seconds.")] = 300.0,
    as_json: JsonOption = False, debug: DebugOption = False,
) -> None:
    """Start a run; with --follow, show its messages, tool calls and approvals as they happen.

    Example: LUNORA_APP=myproject.agents:app lunora run support "Refund order 42" --thread t-42 --follow
    """
    with guard(debug):
        lunora = open_app()
        if agent not in lunora.agents:
            known = ", ".join(sorted(lunora.registry)) or "none"
            raise CommandError(f"the app has no agent named {agent!r} (it has: {known})",
                               "pass one of those names, or add the agent to Lunora(agents=[...])")
        handle = lunora.agents[agent].run(input=input, thread_key=thread, owner=owner)
        status = lunora.store.get_run(handle.id)
        if follow:
            from lunora_jobs.commands.follow import follow as follow_thread

            typer.echo(f"run {handle.id} on thread {handle.thread_key}", err=as_json)
            final = follow_thread(lunora, handle.id, handle.thread_key, timeout=timeout)
        else:
            final = "missing" if status is None else status.status
        if as_json:
            typer.echo(json.dumps({"run_id": handle.id, "thread_key": handle.thread_key, "status": final}))
        elif not follow:
            typer.echo(f"run {handle.id} on thread {handle.thread_key}: {final}")
        if final == "failed":
            raise typer.Exit(1)
