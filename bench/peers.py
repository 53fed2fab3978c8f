"""Benchmark: Lunora Jobs beside its peers and the raw-Celery floor, measured side by side in one run.

    pip install -e ".[bench]"      # DBOS Transact, LangGraph + its Postgres checkpointer (no torch)
    python bench/peers.py          # fuller: 7 latency samples, 3 samples at 30 in flight, 1 at 300
    python bench/peers.py --quick  # about a minute: 5 latency samples, 1 load sample, 30 in flight
    python bench/peers.py --systems floor,lunora   # only some (the floor is always measured)
    python bench/peers.py --lunora-children 2      # also Lunora with 2 pool processes per process
    python bench/peers.py --systems floor,lunora --solo  # also the floor and Lunora on solo workers
                                   # (no hand-off to a pool process): the prefork pool's share
    python bench/peers.py --systems floor,durable,lunora --ladder   # the durable floor given
                                   # Lunora's round trips one by one: a claim, a completion, the notice;
                                   # then those of a claim held in Redis: a read, a write, 2 Redis;
                                   # then today's with the completion's commit under the publish;
                                   # and the raw chain on Lunora's Redis transport, with rungs
                                   # of its own there (LADDER_ON_OURS): 1 write; a read + 1 write
                                   # (a single-commit step); + the notice; today's round trips

Every system runs the same workflow of K sequential no-op steps (default K = 11: a Lunora run is T
model turns with a no-op tool call between them, 2T - 1 steps, so K is odd), durably, on the same
PostgreSQL and Redis:

- **raw Celery chain** (the floor): K no-op tasks, each enqueueing the next; nothing durable; on
  workers of its own running kombu's stock Redis transport, as a Celery user's would;
- **floor + 1 durable write/hop**: the same chain, each hop first committing one row (one round trip,
  one WAL flush): what recording every step durably costs at the least, in any design that crosses
  the broker on every step, so the gap between it and Lunora Jobs is what an engine still can win;
- **Lunora Jobs**: one agent run through real ``celery worker`` processes; every step crosses the
  broker and claims and completes its ledger row on PostgreSQL;
- **DBOS Transact**: a ``@DBOS.workflow`` of K ``@DBOS.step`` calls (each step's output recorded);
- **LangGraph** with ``PostgresSaver``: a line of K nodes, ``durability="sync"``.

Each system gets the same number of processes (``--workers``, default 2): the Celery worker's
``-c``, or that many child processes running the in-process peer. The in-process peers run their
workflows on threads inside those processes, so a workflow waiting on PostgreSQL leaves its process
to the next; a Celery pool process runs one step at a time. ``--lunora-children M`` adds, side by
side, Lunora Jobs on a worker with M pool processes per process of the others (``-c`` M x
``--workers``; its scaling row compares M with 2M): the same cores, more steps waiting at once.
``--solo`` adds the raw chain and Lunora Jobs on ``--workers`` processes of ``celery worker --pool
solo`` sharing one queue, each running its tasks itself: what the prefork pool's hand-off (the
parent's pop, the pipe to a pool process and back) costs a step in each. Lunora's solo workers
enforce its steps' time limits themselves (``workers/solo_limits.py``), so that row is a deployment.
Measured, with the systems taking turns inside each repetition so a change of load on a shared
machine hits them all alike:

1. per-step latency: one workflow at a time, wall time / K, median of ``--repeats``;
2. throughput: ``--concurrent`` (30) and ``--in-flight`` (300) workflows started at once, K x n /
   wall time (start to last finish), median of ``--load-repeats`` (one sample at 300 unless
   ``--heavy-repeats``: it is K x 300 steps long, minutes for the slowest system on a loaded machine);
3. scaling: throughput at ``--concurrent`` with 1 process against ``--workers`` processes, and where
   the machine's CPU went meanwhile (the system, PostgreSQL, Redis, this driver, everything else).

Each system has its own PostgreSQL database (created here, dropped at the end) and the Celery ones
private queues on Redis db 15 (only their own keys are removed; the shared Redis is never flushed).
DBOS and LangGraph are imported only in their child processes, and only by ``bench/``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [p for p in (str(BENCH_DIR.parent), str(BENCH_DIR)) if p not in sys.path]

from _cpu_share import CpuShare  # noqa: E402
from _peers_report import SystemResult, peers_table, samples_line, scaling_table  # noqa: E402

SYSTEMS = ("floor", "durable", "lunora", "dbos", "langgraph")
LADDER = ((1, 0, 0, False), (2, 0, 0, False), (2, 1, 0, False), (1, 2, 1, False), (2, 1, 0, True))
"""The durable floor's rungs (durable writes, extra Redis round trips, PostgreSQL reads per hop, the
last write under the publish): the least a durable step costs, then with a claim committed before
the work, then with Lunora's live notice too (Lunora's round trips today); then the round trips of a
step whose claim is held in Redis (a read and the completion on PostgreSQL, the claim and the notice
on Redis); last, today's round trips with the completion's commit awaited only after the next step
is published (its round trip and WAL flush hidden under the publish)."""
LADDER_ON_OURS = ((1, 0, 0, False), (1, 0, 1, False), (1, 1, 1, False), (2, 1, 0, False))
"""Rungs on the Lunora workers (Lunora's Redis transport, its ack emulation off), which the engine
crosses: the least a durable step costs there; a read before the work and one durable write (the
round trips of a single-commit step, whose successor's claim is written with its completion); the
same with the live notice; today's round trips. What is left between a rung and Lunora Jobs is the
engine's own work, measured on the broker path Lunora runs on."""
FLOOR_ON_LUNORA_TRANSPORT = "raw Celery chain on Lunora's Redis transport"
"""With ``--ladder``: the floor's chain on the Lunora workers, whose Redis transport builds no redis-py
client per publish and per ack (``workers.redis_transport``): that transport's share of the gap."""


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="about a minute: fewer samples, no 300 in flight")
    parser.add_argument("--steps", type=int, default=11, help="K, the steps of one workflow (odd)")
    parser.add_argument("--workers", type=int, default=2, help="processes per system")
    parser.add_argument("--concurrent", type=int, default=30)
    parser.add_argument("--in-flight", type=int, default=300, help="the heavier load (0: skip)")
    parser.add_argument("--repeats", type=int, help="latency samples per system (default 7; quick 5)")
    parser.add_argument("--load-repeats", type=int, help="samples at --concurrent (default 3; quick 1)")
    parser.add_argument("--heavy-repeats", type=int, default=1, help="samples at --in-flight")
    parser.add_argument("--ladder", action="store_true",
                        help="also the durable floor with 2 durable writes per hop, then with a Redis "
                             "round trip more (Lunora's round trips one by one), and with a claim held "
                             "in Redis's (a read, a write, 2 Redis round trips), and today's with the "
                             "completion's commit awaited after the next hop's publish, side by side; "
                             "and rungs on Lunora's own transport (LADDER_ON_OURS)")
    parser.add_argument("--lunora-children", type=int, default=0, metavar="M",
                        help="also Lunora Jobs with M pool processes per process of the other systems "
                             "(celery -c M x --workers), side by side; 0: not measured")
    parser.add_argument("--solo", action="store_true",
                        help="also the raw chain and Lunora Jobs on solo workers (--workers processes of "
                             "celery worker --pool solo on one queue): the prefork hand-off's share")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help=f"comma-separated, of {', '.join(SYSTEMS)} (the floor is always measured)")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.steps % 2 == 0:
        parser.error(f"--steps {args.steps}: a Lunora run of T turns is 2T - 1 steps; pass an odd K, e.g. 11")
    unknown = set(args.systems.split(",")) - set(SYSTEMS)
    if unknown:
        parser.error(f"--systems: unknown {', '.join(sorted(unknown))}; choose from {', '.join(SYSTEMS)}")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.lunora_children < 0 or args.lunora_children == 1:
        parser.error("--lunora-children: pass M >= 2 (M = 1 is the Lunora row itself), or 0")
    args.repeats = args.repeats or (5 if args.quick else 7)
    args.load_repeats = args.load_repeats or (1 if args.quick else 3)
    if args.quick:
        args.in_flight = 0
    return args


class Bench:
    """The systems under test and every resource they hold, released by ``close``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.steps: int = args.steps
        self.processes = sorted({1, args.workers})
        self.systems: list[Any] = []
        self.owners: dict[str, Callable[[int], tuple[set[int], int]]] = {}
        """System name -> (processes -> its pids and process group), for the CPU accounting."""
        self.workers: dict[int, Any] = {}
        self.floor_workers: dict[int, Any] = {}
        self.wide_workers: dict[int, Any] = {}
        """Lunora's workers with ``--lunora-children`` pool processes per process, on queues of their own."""
        self.solo_workers: dict[tuple[str, int], list[Any]] = {}
        """With ``--solo``: (queue, processes) -> that many solo workers sharing the queue."""
        self.databases: list[Any] = []
        self.queues = {p: f"peers-{p}-{uuid.uuid4().hex[:8]}" for p in self.processes}
        self.floor_queues = {p: f"peers-floor-{p}-{uuid.uuid4().hex[:8]}" for p in self.processes}
        """The floor's chains run on workers of their own, on kombu's stock Redis transport."""
        self.wide_queues = ({p: f"peers-wide-{p}-{uuid.uuid4().hex[:8]}" for p in self.processes}
                            if args.lunora_children else {})
        self.solo_queues = ({p: f"peers-solo-{p}-{uuid.uuid4().hex[:8]}" for p in self.processes}
                            if args.solo else {})
        self.floor_solo_queues = ({p: f"peers-floor-solo-{p}-{uuid.uuid4().hex[:8]}" for p in self.processes}
                                  if args.solo else {})
        self.broker: Any = None

    def start(self) -> None:
        """Create the databases, start the Celery workers and the peers' processes."""
        from engine import _configure_env, _create_database

        wanted = set(self.args.systems.split(",")) | {"floor"}
        database_url, handle = _create_database("peers_lunora_")
        self.databases.append(handle)
        env = _configure_env(self.queues[self.args.workers], database_url)
        os.environ["BENCH_TURNS"] = env["BENCH_TURNS"] = str((self.steps + 1) // 2)
        import redis

        from workers.testing import WorkerProcess

        self.broker = redis.Redis.from_url(env["CELERY_BROKER_URL"])
        from _peer_celery import DurableFloorSystem, FloorSystem, LunoraSystem

        self._add(FloorSystem(self.steps, self.floor_queues), self._floor_worker_owner)
        if "durable" in wanted:
            rungs = LADDER if self.args.ladder else LADDER[:1]
            for writes, notices, reads, overlap in rungs:
                durable = DurableFloorSystem(self.steps, self.floor_queues, database_url, writes, notices,
                                             reads, overlap)
                self._add(durable, self._floor_worker_owner)
        if self.args.ladder:
            # What Lunora's Redis transport alone does to the floor (the Lunora workers run it).
            on_ours = FloorSystem(self.steps, self.queues, name=FLOOR_ON_LUNORA_TRANSPORT)
            self._add(on_ours, self._worker_owner)
            for writes, notices, reads, overlap in LADDER_ON_OURS:
                rung = DurableFloorSystem(self.steps, self.queues, database_url, writes, notices, reads,
                                          overlap, transport="Lunora's transport")
                self._add(rung, self._worker_owner)
        if "lunora" in wanted:
            self._add(LunoraSystem(self.steps, self.queues, env["CELERY_BROKER_URL"]), self._worker_owner)
        children = self.args.lunora_children
        if children:
            wide = LunoraSystem(self.steps, self.wide_queues, env["CELERY_BROKER_URL"],
                                name=f"Lunora Jobs, -c {children}x")
            self._add(wide, lambda processes: (set(), self.wide_workers[processes].pid))
        if self.args.solo:
            floor_solo = FloorSystem(self.steps, self.floor_solo_queues,
                                     name="raw Celery chain, solo workers")
            self._add(floor_solo, partial(self._solo_owner, self.floor_solo_queues))
            if "lunora" in wanted:
                solo = LunoraSystem(self.steps, self.solo_queues, env["CELERY_BROKER_URL"],
                                    name="Lunora Jobs, solo workers")
                self._add(solo, partial(self._solo_owner, self.solo_queues))
        starters: list[Callable[[], Any]] = []
        for p in self.processes:
            self.workers[p] = WorkerProcess(self.queues[p], env, concurrency=p, app_module="_common")
            self.floor_workers[p] = WorkerProcess(self.floor_queues[p], {**env, "BENCH_STOCK_TRANSPORT": "1"},
                                                  concurrency=p, app_module="_common")
            starters += [self.workers[p].start, self.floor_workers[p].start]
            if children:
                self.wide_workers[p] = WorkerProcess(self.wide_queues[p], env, concurrency=p * children,
                                                     app_module="_common")
                starters.append(self.wide_workers[p].start)
            stock = {"BENCH_STOCK_TRANSPORT": "1"}
            for queues, extra in ((self.solo_queues, {}), (self.floor_solo_queues, stock)):
                if p in queues:
                    solos = [WorkerProcess(queues[p], {**env, **extra}, concurrency=1, app_module="_common",
                                           pool="solo") for _ in range(p)]
                    self.solo_workers[queues[p], p] = solos
                    starters += [worker.start for worker in solos]
        from _peer_procs import PeerProcesses

        for kind in ("dbos", "langgraph"):
            if kind in wanted:
                url, handle = _create_database(f"peers_{kind}_")
                self.databases.append(handle)
                peer = PeerProcesses(kind, url.replace("postgresql+psycopg://", "postgresql://"),
                                     self.steps, self.args.workers)
                self._add(peer, peer.owner)
                starters.append(peer.start)
        # Side by side: each waits for its processes to import and connect, which is most of the time.
        with ThreadPoolExecutor(len(starters)) as pool:
            for started in [pool.submit(start) for start in starters]:
                started.result()

    def _add(self, system: Any, owner: Callable[[int], tuple[set[int], int]]) -> None:
        self.systems.append(system)
        self.owners[system.name] = owner

    def _worker_owner(self, processes: int) -> tuple[set[int], int]:
        return set(), self.workers[processes].pid

    def _floor_worker_owner(self, processes: int) -> tuple[set[int], int]:
        return set(), self.floor_workers[processes].pid

    def _solo_owner(self, queues: dict[int, str], processes: int) -> tuple[set[int], int]:
        return {worker.pid for worker in self.solo_workers[queues[processes], processes]}, -1

    def close(self) -> None:
        """Stop everything started, drop the databases, remove the queues' keys."""
        from engine import _drop_database

        for system in self.systems:
            _quietly(system.close)
        solos = [worker for group in self.solo_workers.values() for worker in group]
        for worker in [*self.workers.values(), *self.floor_workers.values(), *self.wide_workers.values(),
                       *solos]:
            _quietly(worker.stop)
        if self.broker is not None:
            for queue in [*self.queues.values(), *self.floor_queues.values(), *self.wide_queues.values(),
                          *self.solo_queues.values(), *self.floor_solo_queues.values()]:
                self.broker.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        for handle in self.databases:
            _quietly(partial(_drop_database, handle))


def _quietly(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception as exc:  # cleanup goes on: one failure must not leave the rest running
        print(f"  cleanup: {type(exc).__name__}: {exc}", file=sys.stderr)


def measure(bench: Bench) -> list[SystemResult]:
    """Warm every system, then take the samples, the systems taking turns in each repetition."""
    args, steps, top = bench.args, bench.steps, bench.args.workers
    results = {system.name: SystemResult(system.name) for system in bench.systems}
    cpu = {(system.name, p): CpuShare() for system in bench.systems for p in bench.processes}
    _progress("warming up every system (imports, pools, prepared statements; every process once)")
    for system in bench.systems:
        system.batch(1, 1)
        system.batch(2 * top, top)
    _progress(f"latency: {args.repeats} x one workflow per system")
    for _ in range(args.repeats):
        for system in bench.systems:
            results[system.name].latency_ms.append(system.batch(1, 1) * 1000.0 / steps)
    rounds = [(args.concurrent, r, args.load_repeats) for r in range(args.load_repeats)]
    if args.in_flight > 0:
        rounds += [(args.in_flight, r, args.heavy_repeats) for r in range(args.heavy_repeats)]
    for n, repeat, of in rounds:
        _progress(f"load: {n} in flight, sample {repeat + 1} of {of}")
        for system in bench.systems:
            for p in (bench.processes if n == args.concurrent else [top]):
                pids, group = bench.owners[system.name](p)
                wall = cpu[system.name, p].measure(partial(system.batch, n, p), pids, group)
                rate = n * steps / wall
                result = results[system.name]
                if n == args.concurrent:
                    result.scaling.setdefault(p, []).append(rate)
                if p == top:
                    result.throughput.setdefault(n, []).append(rate)
    for system in bench.systems:
        results[system.name].cpu = {p: cpu[system.name, p].summary() for p in bench.processes}
    return [results[system.name] for system in bench.systems]


_BEGAN = time.monotonic()


def _progress(what: str) -> None:
    print(f"[{time.monotonic() - _BEGAN:5.0f} s] {what}", file=sys.stderr, flush=True)


def report(bench: Bench, results: list[SystemResult], began: float, load: tuple[float, ...]) -> None:
    """Print the tables, the samples and what the scaling measured about the CPU."""
    args = bench.args
    loads = [n for n in (args.concurrent, args.in_flight) if n > 0]
    print(f"\npeers: K = {args.steps} no-op steps per workflow, durable; same PostgreSQL and Redis; "
          f"{args.workers} processes per system; medians of {args.repeats} latency samples, "
          f"{args.load_repeats} at {args.concurrent} in flight"
          + (f", {args.heavy_repeats} at {args.in_flight}" if args.in_flight > 0 else "")
          + f"; {time.monotonic() - began:.0f} s; load average {load[0]:.1f} -> "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(peers_table(results, loads))
    print("samples:")
    for result in results:
        print(samples_line(result))
    print(f"\nscaling 1 -> {args.workers} processes: "
          + scaling_table(results, bench.processes, args.concurrent))
    print("where the CPU went during those samples (average cores):")
    for result in results:
        for p, line in result.cpu.items():
            print(f"  {result.name}, {p} process{'es' if p > 1 else ''}: {line}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the report."""
    args = _args(argv)
    began, load = time.monotonic(), os.getloadavg()
    bench = Bench(args)
    try:
        _progress(f"starting: {args.workers}-process and 1-process Celery workers, the peers' processes")
        bench.start()
        results = measure(bench)
    finally:
        bench.close()
    report(bench, results, began, load)
    return 0


if __name__ == "__main__":
    sys.exit(main())
