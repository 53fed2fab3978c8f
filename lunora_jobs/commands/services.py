"""The long-running processes: ``lunora worker|beat|flower|api|ingress`` and ``lunora example``.

``worker``, ``beat`` and ``flower`` pass their extra arguments to Celery.
"""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def register(app: typer.Typer) -> None:
    """Add the process commands to ``app``."""
    app.command("example")(example)
    app.command("worker", context_settings=PASS_THROUGH)(worker)
    app.command("beat", context_settings=PASS_THROUGH)(beat)
    app.command("flower", context_settings=PASS_THROUGH)(flower)
    app.command("api")(api)
    app.command("ingress")(ingress)


def _celery(argv: list[str]) -> None:
    from workers.celery_app import main

    main(argv)


def example(
    prompt: Annotated[
        str, typer.Argument(help="What to ask the example agent.")
    ] = "What's the weather in Berlin?",
) -> None:
    """Run the example agent end to end (offline model unless OPENAI_API_KEY/OPENAI_BASE_URL is set).

    Example: lunora example "What's the weather in Paris?"
    """
    from lunora_jobs.example import main

    main(prompt)


def worker(ctx: typer.Context) -> None:
    """A Celery worker for the app named by LUNORA_APP (extra arguments go to Celery).

    Example: LUNORA_APP=myproject.agents:app lunora worker --concurrency 4
    (or --pool solo: one step at a time, run by the worker process itself; start one per step to run at once;
    other pools are refused: they would not enforce the steps' time limits)
    """
    _celery(["worker", *ctx.args])


def beat(ctx: typer.Context) -> None:
    """Celery beat: the sweep tick, the due-schedules tick (delayed runs, cron entries). Run one replica.

    Example: LUNORA_APP=myproject.agents:app lunora beat
    """
    _celery(["beat", *ctx.args])


def flower(ctx: typer.Context) -> None:
    """Flower for the fleet on CELERY_BROKER_URL; FLOWER_BASIC_AUTH=user:password protects it and its API.

    Example: FLOWER_BASIC_AUTH=ops:secret lunora flower --port 5555
    """
    _celery(["flower", *ctx.args])


def api(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8000,
    workers: Annotated[int, typer.Option(help="API processes (streams meet through Redis).")] = 1,
    log_level: Annotated[str, typer.Option(help="uvicorn's log level (warning: no access log).")] = "info",
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of a startup error.")] = False,
) -> None:
    """The HTTP API, live thread streams and the console (/console) for the app named by LUNORA_APP.

    Example: LUNORA_APP=myproject.agents:app lunora api --port 8000
    """
    _serve("api", debug, host=host, port=port, workers=workers, log_level=log_level)


def ingress(
    host: Annotated[str, typer.Option(help="Interface to bind (HTTP and SMTP).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port: webhooks, POST /email, GET /healthz.")] = 8080,
    smtp_port: Annotated[int | None, typer.Option(help="SMTP port (off when not given).")] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn's log level.")] = "info",
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of a startup error.")] = False,
) -> None:
    """Slack / GitHub / Discord webhooks and email (SMTP, raw-mail POST) for the app named by LUNORA_APP.

    Example: LUNORA_APP=myproject.agents:app lunora ingress --port 8080 --smtp-port 2525
    """
    _serve("ingress", debug, host=host, port=port, smtp_port=smtp_port, log_level=log_level)


def _serve(command: str, debug: bool, **kwargs: object) -> None:
    """Run a server; a startup error (``LunoraError``) is one line and exit code 2.

    The server is found by name: ``channels`` depends on ``lunora_jobs``, never the other way.
    """
    from lunora_jobs.errors import LunoraError

    module = {"api": "lunora_jobs.api.serve", "ingress": "channels.serve"}[command]
    try:
        importlib.import_module(module).serve(**kwargs)
    except LunoraError as exc:
        if debug:
            raise
        typer.echo(f"lunora {command}: {exc} (--debug shows the traceback)", err=True)
        raise typer.Exit(2) from None
