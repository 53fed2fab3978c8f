"""What every command group shares: the common options, one-line errors with their fix, opening the
store or the app, and printing rows as a table (people) or JSON lines (``--json``, scripts).

Heavy modules (SQLAlchemy stores, the app, Celery) are imported inside the helpers, so ``lunora
--help`` stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from lunora_jobs.runtime.app import Lunora
    from lunora_jobs.store.sql import SqlStore

DebugOption = Annotated[bool, typer.Option("--debug", help="Show the full traceback of an error.")]
JsonOption = Annotated[bool, typer.Option("--json", help="One JSON object per line, for scripts.")]
UrlOption = Annotated[str | None, typer.Option("--url", help="Database URL (default: LUNORA_DATABASE_URL).")]

# A missing driver names the extra that installs it.
EXTRAS = {
    "psycopg": "postgres", "pymysql": "mysql", "qdrant_client": "qdrant", "openai": "openai",
    "anthropic": "anthropic", "fastapi": "api", "uvicorn": "api", "slack_sdk": "channels",
    "aiosmtpd": "channels", "nacl": "channels",
}


class CommandError(Exception):
    """An error a user can fix: ``str`` is what went wrong, ``fix`` what to do about it."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def explain(exc: BaseException) -> tuple[str, str]:
    """(what went wrong, how to fix it) for an error a user can cause; one line each."""
    import sqlalchemy.exc

    from lunora_jobs.errors import LunoraError

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if isinstance(exc, CommandError):
        return first, exc.fix
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        extra = EXTRAS.get(exc.name.split(".")[0])
        fix = f"pip install 'lunora-jobs[{extra}]'" if extra else f"pip install {exc.name.split('.')[0]}"
        return f"{exc.name} is not installed", fix
    if isinstance(exc, sqlalchemy.exc.ArgumentError):
        return first, "set LUNORA_DATABASE_URL to a URL such as postgresql://user@host:5432/db"
    if isinstance(exc, sqlalchemy.exc.OperationalError | sqlalchemy.exc.ProgrammingError):
        if "no such table" in first or ("does not exist" in first and "relation" in first):
            return first, "run `lunora db upgrade` to create the tables"
        return first, "check LUNORA_DATABASE_URL and that the database answers (`lunora doctor`)"
    if isinstance(exc, LunoraError):
        return f"{type(exc).__name__}: {first}", "see the message above; `lunora doctor` checks the setup"
    return f"{type(exc).__name__}: {first}", "rerun with --debug for the traceback"


@contextmanager
def guard(debug: bool) -> Iterator[None]:
    """Turn an error into one line, with its fix, on stderr; exit code 1 (``--debug``: the traceback)."""
    try:
        yield
    except typer.Exit:
        raise
    except Exception as exc:
        if debug:
            raise
        message, fix = explain(exc)
        typer.echo(f"error: {message} — fix: {fix} (--debug shows the traceback)", err=True)
        raise typer.Exit(1) from None


def open_store(url: str | None) -> SqlStore:
    """The store at ``url`` (default: the configured database). Never creates tables: a command
    pointed at the wrong database says so instead of provisioning it."""
    from lunora_jobs.config import Settings
    from lunora_jobs.store.sql import create_store

    return create_store(url or Settings().resolved_database_url(), auto_create_tables=False)


def open_app() -> Lunora:
    """The app named by ``LUNORA_APP`` (its agents, store and broker)."""
    from lunora_jobs.runtime.app import load_app

    return load_app()


def iso(ms: int | None) -> str:
    """An epoch-ms time as ISO 8601 UTC to the second ("" for None)."""
    return "" if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def emit(rows: Sequence[dict[str, Any]], *, as_json: bool, title: str, empty: str) -> None:
    """Print ``rows`` as a table (their keys are the columns) or as JSON lines."""
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row, default=str))
        return
    if not rows:
        typer.echo(empty)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in rows[0]:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row.values()))
    Console(width=200).print(table)
