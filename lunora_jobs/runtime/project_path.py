"""The user's project directory on ``sys.path``, so ``LUNORA_APP`` finds modules the way ``celery -A`` does.

``LUNORA_APP=myproj.agents:app lunora worker``, run from the project directory, must import
``myproj`` without ``PYTHONPATH``. ``python -m ...`` puts the working directory on ``sys.path``, but
console scripts (``lunora``, ``celery``, ``uvicorn``'s own aside) do not; Celery's ``-A`` therefore
adds it while importing the app (``celery.utils.imports.import_from_cwd``). We add it for the life of
the process instead of for the one import, so what the user's code imports later (a tool importing a
sibling module on first call, a function path resolved at run time) resolves too. Every process
that loads the app goes through ``import_path`` and so through here: worker pool processes, beat,
the API, ingress and the CLI.
"""

from __future__ import annotations

import os
import sys


def ensure_cwd_on_path() -> None:
    """Put the working directory first on ``sys.path`` unless it is already there (as ``""`` or itself)."""
    try:
        cwd = os.getcwd()
    except FileNotFoundError:  # the directory was removed under us: nothing to add
        return
    if "" in sys.path or cwd in sys.path:
        return
    sys.path.insert(0, cwd)
