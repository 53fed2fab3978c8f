"""``lunora doctor``: which settings are set, which services answer, and how to fix what does not."""

from __future__ import annotations

import typer

from lunora_jobs.commands._common import JsonOption


def register(app: typer.Typer) -> None:
    """Add ``lunora doctor`` to ``app``."""
    app.command("doctor")(doctor)


def doctor(as_json: JsonOption = False) -> None:
    """Check every configured service for real (a query, migrations at head, PING, the broker's transport,
    LUNORA_APP's agents, the model endpoint) and say how to fix what fails; exit code 1 if anything does.

    Example: LUNORA_DATABASE_URL=postgresql://app@db/app CELERY_BROKER_URL=redis://redis:6379/0 lunora doctor
    """
    from lunora_jobs.doctor import main

    code = main(as_json=as_json)
    raise typer.Exit(int(code) if isinstance(code, int) else 0)
