"""A run's status and its thread's status moved under one lock (the twin of ``sql/_run_status.py``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

from lunora_jobs.store._codec import Clock
from lunora_jobs.store._rules import status_move_fields
from lunora_jobs.store.records import RunRecord, ThreadRecord


class MemoryRunStatusMixin:
    """``transition_run_and_thread`` of ``InMemoryStore``."""

    _lock: threading.RLock
    _runs: dict[str, RunRecord]
    _threads: dict[str, ThreadRecord]

    clock: Clock
    _patch_run: Callable[[str, dict[str, Any], int], None]  # MemoryLedgerMixin's

    def transition_run_and_thread(
        self, run_id: str, from_statuses: Collection[str], *, thread_status: str, release: bool = False,
        **fields: Any,
    ) -> bool:
        """Move the run (compare-and-set on its status) and its thread's status together;
        ``release``: also free the thread's slot, only if this run holds it. True if the run moved."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status not in from_statuses:
                return False
            now = self.clock()
            self._patch_run(run_id, status_move_fields(fields), now)
            thread = self._threads.get(run.thread_id)
            if thread is None or (release and thread.active_run_id != run_id):
                return True
            slot = None if release else thread.active_run_id
            self._threads[thread.id] = replace(thread, status=thread_status, active_run_id=slot,
                                               updated_at=now)
            return True
