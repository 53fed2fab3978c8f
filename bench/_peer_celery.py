"""The Celery side of ``bench/peers.py``: the raw-Celery floor and Lunora Jobs, both served by real
``celery -A _common worker`` processes (``workers.testing.WorkerProcess``), one worker per pool size
being compared (``-c 1`` and ``-c N``), each on a private queue.

The floor is a chain of K no-op tasks, each enqueueing the next (``_common.hop``); the durable floor
the same chain with one durable row written per hop before the next is sent; Lunora Jobs is one
scripted agent run of T turns with a no-op tool call between them (K = 2T - 1 durable steps: every
step crosses the broker, claims and completes its ledger row on PostgreSQL).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from engine import raw_chains

WAIT_TIMEOUT_S = 600.0
POLL_S = 0.02


class FloorSystem:
    """Raw Celery chains on the workers' queues (``processes`` -> queue)."""

    name = "raw Celery chain (floor)"

    def __init__(self, steps: int, queues: Mapping[int, str], name: str | None = None) -> None:
        self.steps, self.queues = steps, dict(queues)
        self.name = name or self.name
        self.writes = self.notices = self.reads = 0
        self.overlap = False

    def batch(self, count: int, processes: int) -> float:
        """Run ``count`` chains at once on the ``processes``-process worker; return the wall seconds."""
        ms = raw_chains(self.steps, count, self.queues[processes], self.writes, self.notices, self.reads,
                        self.overlap)
        return ms * self.steps / 1000.0

    def close(self) -> None:
        """Nothing held: the chains' finish keys are removed as they are read."""


class DurableFloorSystem(FloorSystem):
    """The floor's chains with ``writes`` durable writes per hop (``_common.HOPS_TABLE_DDL``, created
    on ``database_url``), ``notices`` more Redis round trips and ``reads`` PostgreSQL reads; with
    ``overlap`` the last write runs under the publish of the next hop; ``transport`` names the
    workers' transport in the row when it is not the floor's (kombu's stock one). One write, nothing
    else: one round trip and one WAL flush, the least a step can add to a broker hop in any system
    that records every step before the next may start."""

    def __init__(self, steps: int, queues: Mapping[int, str], database_url: str, writes: int = 1,
                 notices: int = 0, reads: int = 0, overlap: bool = False, transport: str | None = None
                 ) -> None:
        import _common

        super().__init__(steps, queues)
        self.writes, self.notices, self.reads, self.overlap = writes, notices, reads, overlap
        self.name = f"floor + {writes} durable write{'s' if writes > 1 else ''}" + (
            " (the last under the publish)" if overlap else "") + (
            f" + {reads} read{'s' if reads > 1 else ''}" if reads else "") + (
            f" + {notices} Redis round trip{'s' if notices > 1 else ''}" if notices else "") + "/hop" + (
            f" on {transport}" if transport else "")
        engine = sa.create_engine(database_url)
        with engine.begin() as conn:
            conn.execute(sa.text(_common.HOPS_TABLE_DDL))
        engine.dispose()


class LunoraSystem:
    """Lunora Jobs runs started from this process on each worker's queue, awaited on the runs table."""

    name = "Lunora Jobs"

    def __init__(
        self, steps: int, queues: Mapping[int, str], broker_url: str, name: str | None = None
    ) -> None:
        import _common

        from lunora_jobs.store.schema import runs
        from workers.dispatch import CeleryDispatcher

        self.name = name or self.name
        self.steps = steps
        self.apps = {p: _common.build_lunora(dispatcher=CeleryDispatcher(broker_url, queue=q))
                     for p, q in queues.items()}
        self._runs = runs
        next(iter(self.apps.values())).store.ensure_tables()

    def batch(self, count: int, processes: int) -> float:
        """Start ``count`` runs at once (``agent.run()`` included, as a user sees it); return the wall
        seconds from the first start to the last run's completion (its ``updated_at``, written by the
        worker on the same clock)."""
        app = self.apps[processes]
        start = time.time()
        ids = [app.agents.bench.run(input="go", thread_key="peers-" + uuid.uuid4().hex).id
               for _ in range(count)]
        return self._wait(app, ids) - start

    def _wait(self, app: Any, ids: list[str]) -> float:
        runs = self._runs
        query = sa.select(runs.c.id, runs.c.status, runs.c.updated_at).where(runs.c.id.in_(ids))
        deadline = time.monotonic() + WAIT_TIMEOUT_S
        while True:
            with app.store.engine.connect() as conn:
                rows = conn.execute(query).all()
            ended = [row for row in rows if row.status in ("completed", "failed", "cancelled")]
            if len(ended) == len(ids):
                failed = [row.id for row in ended if row.status != "completed"]
                if failed:
                    raise RuntimeError(f"{len(failed)} benchmark runs did not complete, e.g. {failed[0]}")
                return float(max(row.updated_at for row in ended)) / 1000.0
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(ids) - len(ended)} of {len(ids)} runs unfinished after "
                                   f"{WAIT_TIMEOUT_S:.0f} s")
            # The finish time is the row's, so polling costs no accuracy, only CPU the worker could use.
            time.sleep(POLL_S)

    def close(self) -> None:
        """Close the apps' pools."""
        for app in self.apps.values():
            app.close()
