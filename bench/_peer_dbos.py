"""The DBOS Transact peer of ``bench/peers.py``: a workflow of K no-op steps, checkpointed in PostgreSQL.

Each ``@DBOS.step`` records its output in DBOS's system database before the next one runs, which
is the durability a Lunora step has (its result is committed before its successor is enqueued).
Concurrent workflows go through ``DBOS.start_workflow`` (DBOS's own executor threads in this
process). Only ``bench/`` imports this module: the package never depends on DBOS.
"""

from __future__ import annotations

import time

from dbos import DBOS


@DBOS.step()
def noop_step(i: int) -> int:
    """A step that does nothing but be recorded."""
    return i


@DBOS.workflow()
def noop_workflow(steps: int) -> int:
    """``steps`` no-op steps, one after the other."""
    for i in range(steps):
        noop_step(i)
    return steps


class DbosPeer:
    """DBOS launched on its own system database (``database_url``, created and dropped by the caller)."""

    name = "DBOS Transact"

    def __init__(self, database_url: str, steps: int, pool_size: int = 8) -> None:
        self.steps = steps
        DBOS(config={
            "name": "lunora-peers-bench", "system_database_url": database_url,
            "sys_db_pool_size": pool_size, "log_level": "WARNING",
        })
        DBOS.launch()

    def batch(self, count: int) -> tuple[float, float]:
        """Run ``count`` workflows at once; return (start, end) epoch seconds."""
        start = time.time()
        if count == 1:
            noop_workflow(self.steps)
        else:
            handles = [DBOS.start_workflow(noop_workflow, self.steps) for _ in range(count)]
            for handle in handles:
                if handle.get_result() != self.steps:
                    raise RuntimeError(f"DBOS workflow {handle.workflow_id} did not run its steps")
        return start, time.time()

    def close(self) -> None:
        """Stop DBOS's threads and close its pool (the caller drops the database)."""
        DBOS.destroy()
