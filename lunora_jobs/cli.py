"""The ``lunora`` command.

Subcommands import their module only when run, so ``lunora db upgrade`` never loads Celery and
``lunora --help`` stays fast.

Example::

    lunora db upgrade            # apply the Alembic migrations to LUNORA_DATABASE_URL
    lunora db current            # which revision the database is at
    lunora example               # run the example agent end to end (offline by default)
    lunora worker                # a Celery worker for the app named by LUNORA_APP
    lunora ingress --port 8080 --smtp-port 2525   # webhooks + SMTP into the queue
    lunora rag sync ./docs --index docs   # index a folder; define_rag(index="docs") reads it
    lunora pricing list          # model prices (USD per 1M tokens) and when each took effect
    lunora pricing set gpt-4o-mini --input 0.15 --output 0.60 --cached-input 0.075 --from 2026-01-01
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Lunora Jobs: durable AI agents on Celery.", no_args_is_help=True)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
rag_app = typer.Typer(help="Retrieval (RAG) indexes.", no_args_is_help=True)
pricing_app = typer.Typer(help="Model prices (USD per 1M tokens) that cost usage rows.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(rag_app, name="rag")
app.add_typer(pricing_app, name="pricing")


def _call(path: str, *args: object, **kwargs: object) -> object:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)(*args, **kwargs)


DebugOption = Annotated[bool, typer.Option("--debug", help="Show the full traceback of an error.")]


def _report(path: str, debug: bool, **kwargs: object) -> None:
    """Print what ``module:function`` returns; an error is one line and the fix (``--debug``: traceback)."""
    try:
        typer.echo(_call(path, **kwargs))
    except Exception as exc:
        if debug:
            raise
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        typer.echo(f"error: {type(exc).__name__}: {lines[0]} (--debug shows the traceback)", err=True)
        raise typer.Exit(1) from None


@db_app.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
    url: Annotated[str | None, typer.Option(help="Database URL (default: LUNORA_DATABASE_URL).")] = None,
    debug: DebugOption = False,
) -> None:
    """Apply the forward-only Alembic migrations and say what changed."""
    _report("lunora_jobs.store.migrations:upgrade_report", debug, url=url, revision=revision)


@db_app.command("current")
def db_current(
    url: Annotated[str | None, typer.Option(help="Database URL (default: LUNORA_DATABASE_URL).")] = None,
    debug: DebugOption = False,
) -> None:
    """Say which revision the database is at, and whether it is the latest."""
    _report("lunora_jobs.store.migrations:current_report", debug, url=url)


@rag_app.command("sync")
def rag_sync(
    directory: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="Folder to index.")],
    index: Annotated[str, typer.Option(help="Index to write: read it with define_rag(index=...).")] = "docs",
    namespace: Annotated[str | None, typer.Option(help="Namespace (tenant) to index into.")] = None,
    prune: Annotated[bool, typer.Option(help="Remove indexed files no longer in the folder.")] = True,
) -> None:
    """Index every text file under DIRECTORY into INDEX (content-hash short-circuits unchanged files)."""
    _call("rag.cli:sync_directory", directory, namespace=namespace, prune=prune, index=index)


@pricing_app.command("list")
def pricing_list(
    model: Annotated[str | None, typer.Option(help="Only this model's prices.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    url: Annotated[str | None, typer.Option(help="Database URL (default: LUNORA_DATABASE_URL).")] = None,
) -> None:
    """Every stored price, by model then effective-from date."""
    _call("lunora_jobs.runtime.pricing_admin:list_prices", model=model, as_json=as_json, url=url)


@pricing_app.command("set")
def pricing_set(
    model: Annotated[str, typer.Argument(help="Model name as usage rows spell it, e.g. gpt-4o-mini.")],
    input: Annotated[float, typer.Option("--input", help="USD per 1M input tokens.")],
    output: Annotated[float, typer.Option("--output", help="USD per 1M output tokens.")],
    cached_input: Annotated[
        float | None, typer.Option("--cached-input", help="USD per 1M cache-read tokens (default: --input).")
    ] = None,
    effective_from: Annotated[
        str | None, typer.Option("--from", help="ISO date or time it applies from, UTC (default: now).")
    ] = None,
    url: Annotated[str | None, typer.Option(help="Database URL (default: LUNORA_DATABASE_URL).")] = None,
) -> None:
    """Set a model's price from a date; the same model and date is replaced."""
    _call(
        "lunora_jobs.runtime.pricing_admin:set_price", model, input_per_mtok=input, output_per_mtok=output,
        cached_input_per_mtok=cached_input, effective_from=effective_from, url=url,
    )


@app.command("example")
def example(
    prompt: Annotated[
        str, typer.Argument(help="What to ask the example agent.")
    ] = "What's the weather in Berlin?",
) -> None:
    """Run the example agent end to end (offline model unless OPENAI_API_KEY/OPENAI_BASE_URL is set)."""
    _call("lunora_jobs.example:main", prompt)


@app.command("worker", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def worker(ctx: typer.Context) -> None:
    """A Celery worker for the app named by LUNORA_APP (extra arguments go to Celery)."""
    _call("workers.celery_app:main", ["worker", *ctx.args])


@app.command("beat", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def beat(ctx: typer.Context) -> None:
    """Celery beat: the sweep tick that re-enqueues stalled runs. Run one replica."""
    _call("workers.celery_app:main", ["beat", *ctx.args])


@app.command("flower", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def flower(ctx: typer.Context) -> None:
    """Flower for the fleet on CELERY_BROKER_URL; FLOWER_BASIC_AUTH=user:password protects it and its API."""
    _call("workers.celery_app:main", ["flower", *ctx.args])


@app.command("api")
def api(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8000,
    workers: Annotated[int, typer.Option(help="API processes (streams meet through Redis).")] = 1,
    log_level: Annotated[str, typer.Option(help="uvicorn's log level (warning: no access log).")] = "info",
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of a startup error.")] = False,
) -> None:
    """The HTTP API, live thread streams and the console (/console) for the app named by LUNORA_APP."""
    _serve("api", "lunora_jobs.api.serve:serve", debug, host=host, port=port, workers=workers,
           log_level=log_level)


def _serve(command: str, path: str, debug: bool, **kwargs: object) -> None:
    """Run a server; a startup error (``LunoraError``) is one line and exit code 2."""
    from lunora_jobs.errors import LunoraError

    try:
        _call(path, **kwargs)
    except LunoraError as exc:
        if debug:
            raise
        typer.echo(f"lunora {command}: {exc} (--debug shows the traceback)", err=True)
        raise typer.Exit(2) from None


@app.command("ingress")
def ingress(
    host: Annotated[str, typer.Option(help="Interface to bind (HTTP and SMTP).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port: webhooks, POST /email, GET /healthz.")] = 8080,
    smtp_port: Annotated[int | None, typer.Option(help="SMTP port (off when not given).")] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn's log level.")] = "info",
    debug: DebugOption = False,
) -> None:
    """Slack / GitHub / Discord webhooks and email (SMTP, raw-mail POST) for the app named by LUNORA_APP."""
    _serve("ingress", "channels.serve:serve", debug, host=host, port=port, smtp_port=smtp_port,
           log_level=log_level)


@app.command("doctor")
def doctor() -> None:
    """Say which settings are set, which services answer, and how to fix what does not."""
    code = _call("lunora_jobs.doctor:main")
    raise typer.Exit(int(code) if isinstance(code, int) else 0)


def main() -> None:
    """Entry point of the ``lunora`` console script."""
    app(prog_name="lunora")


if __name__ == "__main__":  # pragma: no cover
    main()
