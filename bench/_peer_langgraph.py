"""The LangGraph peer of ``bench/peers.py``: a graph of K no-op nodes in a line, checkpointed by
``PostgresSaver`` with ``durability="sync"`` (each super-step's checkpoint is written before the
next node runs — the durability a Lunora step has).

Concurrent invocations run on a thread pool sharing one psycopg connection pool, the saver's
documented way to serve many threads. Only ``bench/`` imports this module.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypedDict

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, StateGraph
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

MAX_THREADS = 64
"""More invocations than this wait for a thread (they are in flight from the caller's point of view)."""


class Counter(TypedDict):
    i: int


def _noop(state: Counter) -> dict[str, int]:
    return {"i": state["i"] + 1}


class LangGraphPeer:
    """A compiled ``steps``-node graph on its own PostgreSQL database (created and dropped by the caller)."""

    name = "LangGraph + PostgresSaver"

    def __init__(self, database_url: str, steps: int, pool_size: int = 8) -> None:
        self.steps = steps
        self.pool: ConnectionPool[Any] = ConnectionPool(
            database_url, min_size=1, max_size=pool_size, open=True,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        )
        saver = PostgresSaver(self.pool)
        saver.setup()
        graph = StateGraph(Counter)
        previous = START
        for i in range(steps):
            graph.add_node(f"step_{i}", _noop)
            graph.add_edge(previous, f"step_{i}")
            previous = f"step_{i}"
        graph.add_edge(previous, END)
        self.graph = graph.compile(checkpointer=saver)
        self.threads = ThreadPoolExecutor(MAX_THREADS)

    def _invoke(self, _: int = 0) -> None:
        out = self.graph.invoke(
            {"i": 0}, {"configurable": {"thread_id": uuid.uuid4().hex}}, durability="sync"
        )
        if out["i"] != self.steps:
            raise RuntimeError(f"LangGraph ran {out['i']} of {self.steps} nodes")

    def batch(self, count: int) -> tuple[float, float]:
        """Run ``count`` graphs at once; return (start, end) epoch seconds."""
        start = time.time()
        if count == 1:
            self._invoke()
        else:
            list(self.threads.map(self._invoke, range(count)))
        return start, time.time()

    def close(self) -> None:
        """Stop the threads and close the pool (the caller drops the database)."""
        self.threads.shutdown()
        self.pool.close()
