"""Bodies of spawned processes racing on one row (importable by ``multiprocessing`` spawn)."""

from __future__ import annotations

from typing import Any


def decide_worker(url: str, run_id: str, worker: int, barrier: Any, results: Any) -> None:
    """Race to decide call ``c1``: even workers approve, odd ones reject; report what won."""
    from lunora_jobs.store import SqlStore

    store = SqlStore.from_url(url, auto_create_tables=False)
    barrier.wait(timeout=60)
    record = store.decide_tool_call(
        run_id, "c1", decision="approved" if worker % 2 == 0 else "rejected", decided_by=f"w{worker}"
    )
    results.put((record.decision, record.decided_by))
    store.close()


def dequeue_worker(url: str, thread_id: str, worker: int, barrier: Any, results: Any) -> None:
    """Race to take the head of the queue; report whether this worker removed it."""
    from lunora_jobs.store import SqlStore

    store = SqlStore.from_url(url, auto_create_tables=False)
    barrier.wait(timeout=60)
    results.put(store.dequeue_run(thread_id, "r1"))
    store.close()
