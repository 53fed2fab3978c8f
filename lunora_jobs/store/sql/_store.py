"""``SqlStore``: the durable agent store over PostgreSQL (psycopg 3), MySQL/MariaDB and SQLite.

Example::

    from lunora_jobs.store import create_store
    store = create_store("postgresql://postgres@127.0.0.1:5432/app")   # driver picked for you
    thread = store.ensure_thread("t1", owner="user-7")

Tables are created on first use (``auto_create_tables=True``, the default); pass ``False`` when only
migrations (``lunora db upgrade``) may touch the schema. Each concern is a mixin in its own module
(threads, messages, runs, steps, usage, tool calls, schedules, the run queue, fused hot-path calls,
action proposals, the console's reads, model prices, retention) over ``SqlBase``'s transactions.
"""

from __future__ import annotations

from typing import Any

from lunora_jobs.store._codec import Clock
from lunora_jobs.store.sql._console import SqlConsoleMixin
from lunora_jobs.store.sql._declarations import SqlDeclarationsMixin
from lunora_jobs.store.sql._engine import create_engine
from lunora_jobs.store.sql._fused_calls import SqlFusedCallsMixin
from lunora_jobs.store.sql._governance import SqlGovernance
from lunora_jobs.store.sql._outbox import SqlOutboxMixin
from lunora_jobs.store.sql._pricing import SqlPricingMixin
from lunora_jobs.store.sql._proposals.store import SqlProposalStore
from lunora_jobs.store.sql._retention import SqlRetentionMixin
from lunora_jobs.store.sql._run_queue import SqlRunQueueMixin
from lunora_jobs.store.sql._run_status import SqlRunStatusMixin
from lunora_jobs.store.sql._runs import SqlRunsMixin
from lunora_jobs.store.sql._schedules import SqlSchedulesMixin
from lunora_jobs.store.sql._steps import SqlStepsMixin
from lunora_jobs.store.sql._sweep import SqlSweepMixin
from lunora_jobs.store.sql._threads import SqlThreadsMixin
from lunora_jobs.store.sql._tool_calls import SqlToolCallsMixin
from lunora_jobs.store.sql._usage import SqlUsageMixin


class SqlStore(
    SqlThreadsMixin, SqlFusedCallsMixin, SqlStepsMixin, SqlRunsMixin, SqlUsageMixin, SqlToolCallsMixin,
    SqlSchedulesMixin, SqlProposalStore, SqlRunQueueMixin, SqlConsoleMixin, SqlPricingMixin, SqlSweepMixin,
    SqlRetentionMixin, SqlGovernance, SqlRunStatusMixin, SqlOutboxMixin, SqlDeclarationsMixin,
):
    """The ``AgentStore`` over SQL. Thread-safe; share one per process.

    ``clock`` returns epoch-ms (tests inject one); ``auto_create_tables`` provisions on first use.
    """

    @classmethod
    def from_url(
        cls, url: str, *, clock: Clock | None = None, auto_create_tables: bool = True, **engine_options: Any
    ) -> SqlStore:
        """Build a store and its engine from a database URL."""
        return cls(create_engine(url, **engine_options), clock=clock, auto_create_tables=auto_create_tables)

    def close(self) -> None:
        """Close the engine's pooled connections and the ones its threads hold."""
        if self._held is not None:
            self._held.close()
        self.engine.dispose()


def create_store(url: str, *, clock: Clock | None = None, auto_create_tables: bool = True) -> SqlStore:
    """``SqlStore.from_url``: a store for ``url`` (``postgres://``, ``mysql://``, ``sqlite:///...``)."""
    return SqlStore.from_url(url, clock=clock, auto_create_tables=auto_create_tables)
