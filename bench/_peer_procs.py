"""Run an in-process peer (DBOS, LangGraph) in child processes of its own, as many as the Celery worker
has pool processes, so every system in ``bench/peers.py`` gets the same number of processes (and the
peers' libraries and global state never enter the benchmark's own process).

Each child builds its peer once, then serves ``("batch", n)``: run ``n`` workflows at once and answer
their (start, end) epoch times. A batch spread over several children starts in all of them at once;
its wall time runs from the first start to the last end.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing as mp
import traceback
from multiprocessing.connection import Connection
from typing import Any

PEERS = {"dbos": ("_peer_dbos", "DbosPeer"), "langgraph": ("_peer_langgraph", "LangGraphPeer")}
# Each peer process holds a pool of 8 PostgreSQL connections (plenty for 2 cores; the shared server
# allows 100 clients in all, and other work needs its share).
"""Peer key -> (module, class) in ``bench/``: ``cls(database_url, steps)``, ``.batch(n)``, ``.close()``."""

READY_TIMEOUT_S = 120.0
BATCH_TIMEOUT_S = 600.0


class PeerFailed(RuntimeError):
    """A peer's child process failed (its traceback is the message)."""


def _serve(kind: str, database_url: str, steps: int, conn: Connection) -> None:
    module, name = PEERS[kind]
    try:
        peer = getattr(importlib.import_module(module), name)(database_url, steps)
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        return
    conn.send(("ready", None))
    try:
        while True:
            command, count = conn.recv()
            if command == "stop":
                break
            try:
                conn.send(("ok", peer.batch(count)))
            except Exception:
                conn.send(("error", traceback.format_exc()))
    finally:
        peer.close()


def split(count: int, parts: int) -> list[int]:
    """``count`` workflows over at most ``parts`` processes, as evenly as possible (no empty share)."""
    parts = max(1, min(parts, count))
    return [count // parts + (1 if i < count % parts else 0) for i in range(parts)]


class PeerProcesses:
    """``processes`` children serving one peer on one database."""

    def __init__(self, kind: str, database_url: str, steps: int, processes: int) -> None:
        self.kind, self.database_url, self.steps, self.processes = kind, database_url, steps, processes
        module, name = PEERS[kind]
        self.name: str = getattr(importlib.import_module(module), name).name
        self._children: list[tuple[Any, Connection]] = []

    def start(self) -> PeerProcesses:
        """Start the children one after the other (the first creates the peer's tables)."""
        context = mp.get_context("spawn")
        for _ in range(self.processes):
            ours, theirs = context.Pipe()
            child = context.Process(target=_serve, args=(self.kind, self.database_url, self.steps, theirs),
                                    daemon=True)
            child.start()
            self._children.append((child, ours))
            self._answer(ours, READY_TIMEOUT_S)
        return self

    def owner(self, processes: int) -> tuple[set[int], int]:
        """The children's process ids (and no process group of their own), for the CPU accounting."""
        return {child.pid for child, _ in self._children[:processes]}, -1

    def batch(self, count: int, processes: int) -> float:
        """Run ``count`` workflows at once over ``processes`` children; return the wall seconds."""
        shares = split(count, processes)
        conns = [conn for _, conn in self._children[:len(shares)]]
        for conn, share in zip(conns, shares, strict=True):
            conn.send(("batch", share))
        spans: list[tuple[float, float]] = [self._answer(conn, BATCH_TIMEOUT_S) for conn in conns]
        return max(end for _, end in spans) - min(start for start, _ in spans)

    def _answer(self, conn: Connection, timeout: float) -> Any:
        if not conn.poll(timeout):
            raise PeerFailed(f"{self.name}: no answer from its process in {timeout:.0f} s")
        status, value = conn.recv()
        if status == "error":
            raise PeerFailed(f"{self.name} failed in its process:\n{value}")
        return value

    def close(self) -> None:
        """Stop every child (their peers close their pools); kill one that does not exit."""
        for _, conn in self._children:
            with contextlib.suppress(OSError):  # a child that died has closed its end
                conn.send(("stop", 0))
        for child, _ in self._children:
            child.join(timeout=20)
            if child.is_alive():
                child.kill()
                child.join(timeout=5)
        self._children.clear()
