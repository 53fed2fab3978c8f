"""The Celery pools a Lunora worker runs its steps on: prefork (Celery's default) and solo.

Every step runs under time limits (``workers.time_limits``): at the soft one its attempt fails and is
retried, at the hard one its execution ends, so a hung tool neither holds its lease for good nor runs
beside its own retry. The prefork pool enforces both from its parent process; on the solo pool
``workers.solo_limits`` does. Celery's other pools would run steps without them: ``threads`` enforces
no time limit, ``gevent`` and ``eventlet`` only the hard one, raised at the task's next cooperative
switch (a tool blocked in C code is never reached), and the engine is not built to run under them
(a scratch run on ``--pool gevent -c 16`` took 13.8 ms a step, 5x the solo pool's, and at ``-c 1``
its run never finished; ``threads -c 8`` made fewer steps/s than the solo pool, README Performance).
So a worker started on any other pool refuses to start, with one line naming the pools it runs on,
rather than accept a setting whose guarantees it would not keep. A custom pool class is accepted
when it derives from one of the two.

Example::

    lunora worker --pool threads
    # CRITICAL lunora: --pool threads: ... Start the worker with --pool prefork (the default) or --pool solo.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import bootsteps
from celery.concurrency import ALIASES, get_implementation
from celery.concurrency.prefork import TaskPool as PreforkPool
from celery.concurrency.solo import TaskPool as SoloPool

from lunora_jobs.errors import UnsupportedPoolError
from workers.preflight import EX_CONFIG

log = logging.getLogger(__name__)

SUPPORTED_POOLS: tuple[type[Any], ...] = (PreforkPool, SoloPool)
"""The pools a worker runs steps on (``--pool prefork``, ``--pool solo``), and classes derived from them."""


def check_pool(pool: str | type[Any]) -> None:
    """Raise ``UnsupportedPoolError`` unless ``pool`` (a ``--pool`` name or a pool class) is prefork or
    solo, or a class derived from one of them."""
    implementation = get_implementation(pool)
    if issubclass(implementation, SUPPORTED_POOLS):
        return
    name = pool if isinstance(pool, str) else _name(implementation)
    raise UnsupportedPoolError(
        f"--pool {name}: a Lunora worker runs its steps on the prefork or the solo pool only, the two "
        "that enforce a step's soft and hard time limits (threads enforces none, gevent and eventlet "
        "only the hard one, at a cooperative switch). Start the worker with --pool prefork (the default) "
        "or --pool solo."
    )


def _name(implementation: type[Any]) -> str:
    """The ``--pool`` name of a pool class (the worker holds the class by the time it starts), else
    its ``module:class`` path."""
    path = f"{implementation.__module__}:{implementation.__qualname__}"
    return next((alias for alias, target in ALIASES.items() if target == path), path)


class SupportedPool(bootsteps.StartStopStep):  # type: ignore[misc]
    """Worker bootstep: refuse to start, before the consumer takes a step, on any other pool."""

    def start(self, worker: Any) -> None:
        """Exit with ``EX_CONFIG`` and one critical line when the worker's pool is not supported."""
        try:
            check_pool(worker.pool_cls)
        except UnsupportedPoolError as exc:
            log.critical("lunora: %s", exc)
            raise SystemExit(EX_CONFIG) from exc
