"""``lunora doctor``: every configured service checked for real, and how to fix what fails.

- ``checks.py``: one function per part (database + migrations, broker, Redis, Qdrant, model, app).
- ``report.py``: the table (or ``--json``) and the exit code.

Example::

    from lunora_jobs.doctor import run_checks
    from lunora_jobs.config import Settings
    [c.part for c in run_checks(Settings()) if not c.ok]   # what is broken
"""

from lunora_jobs.doctor.checks import Check, run_checks
from lunora_jobs.doctor.report import main

__all__ = ["Check", "main", "run_checks"]
