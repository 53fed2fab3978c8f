"""Instructions per durable step, counted by valgrind: a CPU measure that does not move with the load.

    python bench/instructions.py            # about 4 minutes on 2 cores (two drives under valgrind)
    python bench/instructions.py --runs 2,12

On this shared machine the ms of a step swing 2x between consecutive runs; the instructions its
process executes move about 2%. So a change to the engine's own work (its Python, the drivers'
Python around each round trip) is compared by instructions: run this in each checkout.

``bench/hotpath.py``'s in-process drive (``execute_step`` over ``SqlStore`` on PostgreSQL, the
``CeleryDispatcher`` publishing to Redis, a 6-turn run with a no-op tool between turns: 11 steps)
runs under ``valgrind --tool=callgrind`` twice, side by side: once with few runs, once with more.
The difference of the two counts, divided by the steps between them, is this process's user-space
instructions per step (with its share of each run's start; the servers' work is in other processes,
and so are the kernel's syscalls). ``PYTHONHASHSEED`` is fixed so both drives lay out alike.
A fresh PostgreSQL database, queue and Redis key prefix per drive, removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "bench")) if p not in sys.path]

TURNS = 6
STEPS_PER_RUN = 2 * TURNS - 1
COLLECTED = re.compile(r"Collected : (\d+)")


def drive(runs: int) -> None:
    """One drive (run under valgrind by ``main``): a warm-up run, then ``runs`` runs."""
    import hotpath
    import redis
    import sqlalchemy as sa

    name = "lunora_instr_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(hotpath.ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    db_url = hotpath.ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    queue, prefix = "instr-" + uuid.uuid4().hex[:8], "instr-" + uuid.uuid4().hex[:8]
    redis_url = f"redis://{hotpath.REDIS_HOST}:{hotpath.REDIS_PORT}/0"
    try:
        app, dispatcher = hotpath.build_app(db_url, redis_url, queue, prefix, TURNS)
        try:
            hotpath.drive(app, dispatcher, 1 + runs, lambda _kind, fn: fn())
        finally:
            app.close()
    finally:
        client = redis.Redis.from_url(redis_url)
        client.delete(queue, f"_kombu.binding.{queue}", *client.scan_iter(f"{prefix}:*"))
        client.close()
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def count(runs: Sequence[int]) -> list[int]:
    """Instructions executed by a drive of each of ``runs`` runs, the drives side by side."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as scratch:
        procs = [subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/cg.{n}.out",
             sys.executable, __file__, "--drive", str(n)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env) for n in runs]
        reports = [proc.communicate()[1] for proc in procs]
    counts = []
    for n, proc, report in zip(runs, procs, reports, strict=True):
        found = COLLECTED.search(report)
        if proc.returncode != 0 or found is None:
            raise SystemExit(f"the drive of {n} runs failed under valgrind:\n{report[-2000:]}")
        counts.append(int(found.group(1)))
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    """Count both drives and print instructions per step."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default="2,12", help="runs in the small and the large drive")
    parser.add_argument("--drive", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive is not None:
        drive(args.drive)
        return 0
    if shutil.which("valgrind") is None:
        print("bench/instructions.py: valgrind not found; install it: apt-get install valgrind",
              file=sys.stderr)
        return 2
    small, large = (int(n) for n in args.runs.split(","))
    low, high = count([small, large])
    steps = (large - small) * STEPS_PER_RUN
    print(f"instructions: execute_step on PostgreSQL + Celery publish on Redis, {TURNS}-turn runs "
          f"({STEPS_PER_RUN} steps), drives of {small} and {large} runs under callgrind")
    print(f"  {(high - low) / steps:,.0f} instructions per step (this process, user space; "
          f"its share of each run's start included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
