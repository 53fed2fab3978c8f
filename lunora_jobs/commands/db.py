"""``lunora db upgrade|current``: the Alembic migrations, saying what they did."""

from __future__ import annotations

from typing import Annotated

import typer

from lunora_jobs.commands._common import DebugOption, UrlOption, guard

NAME = "db"
group = typer.Typer(help="Database schema.", no_args_is_help=True)



@group.command("upgrade")
def upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
    url: UrlOption = None, debug: DebugOption = False,
) -> None:
    """Apply the forward-only Alembic migrations and say what changed.

    Example: LUNORA_DATABASE_URL=postgresql://app@db:5432/app lunora db upgrade
    """
    from lunora_jobs.store.migrations import upgrade_report

    with guard(debug):
        typer.echo(upgrade_report(url=url, revision=revision))


@group.command("current")
def current(url: UrlOption = None, debug: DebugOption = False) -> None:
    """Say which revision the database is at, and whether it is the latest.

    Example: lunora db current --url sqlite:///./.lunora/lunora.db
    """
    from lunora_jobs.store.migrations import current_report

    with guard(debug):
        typer.echo(current_report(url=url))
