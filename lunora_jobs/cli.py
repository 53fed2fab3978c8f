"""The ``lunora`` command: the root app; every group lives in its own module of ``lunora_jobs.commands``.

Example::

    lunora run support "Refund order 42" --thread t-42 --follow   # start a run, watch it live
    lunora runs list --status failed                              # runs, newest first
    lunora runs show RUN_ID                                       # a run's step timeline
    lunora approve t-42 call_1 [--reject --reason "..."]         # decide a pending tool call
    lunora schedules list | lunora schedules cancel ID            # delayed runs and cron entries
    lunora generate agent billing --dir myproject                 # a new agent module
    lunora db upgrade | lunora db current                         # migrations, saying what they did
    lunora doctor                                                 # is every configured service OK?
    lunora worker | beat | flower | api | ingress | example       # the processes
    lunora rag sync ./docs --index docs | lunora pricing list

Every command takes ``--help`` (with an example); errors a user can cause print one line and the fix
(``--debug`` shows the traceback); listing commands take ``--json`` for scripts.
"""

from __future__ import annotations

import typer

from lunora_jobs.commands import register_all

app = typer.Typer(help="Lunora Jobs: durable AI agents on Celery.", no_args_is_help=True)
register_all(app)


def main() -> None:
    """Entry point of the ``lunora`` console script."""
    app(prog_name="lunora")


if __name__ == "__main__":  # pragma: no cover
    main()
