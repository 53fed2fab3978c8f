"""``lunora threads erase``: delete a thread and every row of it, in every agent table."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from lunora_jobs.commands._common import CommandError, DebugOption, JsonOption, UrlOption, guard, open_store

NAME = "threads"
group = typer.Typer(help="Threads: erase one everywhere (retention, a user's deletion request).",
                    no_args_is_help=True)


@group.command("erase")
def erase(
    key: Annotated[str, typer.Argument(help="The thread key (the API's and `lunora run --thread`'s KEY).")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonOption = False, url: UrlOption = None, debug: DebugOption = False,
) -> None:
    """Erase a thread: its messages, runs, step ledger, tool calls, proposals, usage rows, queued runs,
    inbound dedupe rows, episodes and the delayed runs naming it. Refused while a run of it is open.

    Example: lunora threads erase support-42 --yes
    """
    with guard(debug):
        from lunora_jobs.errors import ConflictError, NotFoundError
        from lunora_jobs.runtime.threads_api import ThreadsAPI

        if not yes and not typer.confirm(f"Erase thread {key!r} and everything in it?"):
            raise typer.Exit(1)
        try:
            counts = ThreadsAPI(open_store(url)).erase(key, trusted=True)
        except NotFoundError:
            raise CommandError(f"no thread {key!r}",
                               "check the key (`lunora runs list` shows threads)") from None
        except ConflictError as exc:
            raise CommandError(str(exc).split(";")[0], "cancel the run first, then erase again") from None
        if as_json:
            typer.echo(json.dumps({"thread": key, "deleted": counts}))
            return
        listed = ", ".join(f"{n} {table}" for table, n in sorted(counts.items()) if n)
        typer.echo(f"erased thread {key}: {listed}")
