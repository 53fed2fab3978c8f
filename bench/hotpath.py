"""Micro-benchmark of the durable step's hot path: round trips and ms per step, in one process.

    python bench/hotpath.py [--runs 5] [--turns 6] [--portable]

``execute_step`` over ``SqlStore`` on PostgreSQL + ``RedisLock`` + ``CeleryDispatcher`` (publishing
to a private, unconsumed queue; the published steps are then run here one by one). Every scripted
turn but the last calls a no-op tool, so a run is ``2*turns - 1`` steps: turns and tools.

1. **round trips**: PostgreSQL and Redis are reached through ``rtproxy.RoundTripProxy`` relays that
   count request bursts on the wire (BEGIN, COMMIT, pool pings and pipelines included), and the
   PostgreSQL relay counts the statements in them from the wire protocol (each ``Query`` and
   ``Execute`` message: BEGIN and COMMIT count; the driver-level calls SQLAlchemy's events do not see
   count too). Reported per step kind, and for ``start``: ``agent.run()`` on a new thread (the run's
   start with its first publish and its status notice).
2. **ms per step**: the same runs again on direct connections (no relay), median per step kind: wall
   time, and this process's CPU time (the engine's own cost; on a busy machine the wall time mostly
   measures the wait for a core).
3. **phases**: where that time goes, per step kind (mean wall ms and CPU ms of each phase):
   ``claim+read`` (the store calls before the work: run read, claim, history / turn memo — fused in
   one round trip on PostgreSQL), ``model/tool`` (the scripted model's ``generate`` or the no-op
   tool), ``completion`` (the store calls recording the result, with the fan-in read), ``dispatch``
   (the broker publish of what follows, with the step's live notice pipelined after it), ``notice``
   (a live notice's PUBLISH of its own: a step that enqueued nothing) and ``python`` (everything
   else: the engine's own code — planning, prompt and message building, hooks). A store call's
   CPU is its Python (parameters, row decoding, pool checkout); its wall time minus its CPU is
   mostly the wait on the server.

4. **the server's floor**: median ms of a read (``SELECT 1``) and of a durable commit (a one-row
   autocommit INSERT, which waits for the WAL flush) on the same PostgreSQL.
5. **the WAL flushes, ablated**: the phases again, alternating with runs whose sessions set
   ``synchronous_commit = off`` (a diagnostic only: the engine never runs so, a crash would lose
   claims). A step makes two durable commits (its claim, its completion); the difference in their
   phases is what waiting for the two flushes costs a step, on this disk and under this load. The
   idle probe of 4. understates it: a step's commits write more WAL than a one-row INSERT.

The app publishes live notices on Redis (``RedisEventBus``), as every app with ``LUNORA_REDIS_URL``
does, so the notice PUBLISH is counted and timed (on the broker's server, it rides with the enqueue).

``--portable`` is an ablation: the store's portable completion (a transaction of five statements)
instead of the one-statement completion and the pipelined claim/fan-in reads of PostgreSQL.

A fresh PostgreSQL database, a unique queue and a unique Redis key prefix are used; all of them are
removed afterwards. The machine may be shared, so ms are noisy; round-trip counts are not.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "bench")) if p not in sys.path]

import sqlalchemy as sa  # noqa: E402
from rtproxy import RoundTripProxy  # noqa: E402

PG_HOST, PG_PORT, REDIS_HOST, REDIS_PORT = "127.0.0.1", 5432, "127.0.0.1", 6379
ADMIN_URL = f"postgresql+psycopg://postgres@{PG_HOST}:{PG_PORT}/postgres"


class CollectingDispatcher:
    """Publishes through ``CeleryDispatcher`` (so the broker round trip is real) and keeps the tasks."""

    def __init__(self, broker_url: str | None, queue: str) -> None:
        """``broker_url`` None: ``CELERY_BROKER_URL``'s broker."""
        from workers.dispatch import CeleryDispatcher

        self.inner = CeleryDispatcher(broker_url=broker_url, queue=queue)
        self.pending: deque[Any] = deque()

    def dispatch(self, tasks: Sequence[Any]) -> None:
        """Publish, then remember the tasks to run them here."""
        self.inner.dispatch(tasks)
        self.pending.extend(tasks)

    def dispatch_and_publish(self, tasks: Sequence[Any], publish: Any) -> bool:
        """Publish with the live notice riding along, as ``CeleryDispatcher`` does; remember the tasks."""
        carried = bool(self.inner.dispatch_and_publish(tasks, publish))
        self.pending.extend(tasks)
        return carried

    def revoke(self, run_id: str) -> None:
        """Nothing to revoke: the queue is never consumed."""


PHASES = ("claim+read", "model/tool", "completion", "dispatch", "notice", "python")
COMPLETION_CALLS = frozenset({"complete_step", "complete_step_and_list_steps", "fail_step"})
"""Store calls of the completion phase; every other store call on the hot path reads or claims."""


class PhaseClock:
    """Wall and CPU time of one step, split into ``PHASES`` (only the outermost timed call counts)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.cpu: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self._depth = 0

    def reset(self) -> None:
        """Start a new step."""
        for phase in PHASES:
            self.wall[phase] = self.cpu[phase] = 0.0

    def timed(
        self, phase: str | Callable[[str], str], name: str, fn: Callable[..., Any]
    ) -> Callable[..., Any]:
        """``fn`` wrapped to add its time to ``phase`` (or ``phase(name)``)."""
        label = phase if isinstance(phase, str) else phase(name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return fn(*args, **kwargs)
            self._depth += 1
            began, cpu = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.wall[label] += (time.perf_counter() - began) * 1000.0
                self.cpu[label] += (time.process_time() - cpu) * 1000.0
                self._depth -= 1

        return wrapper

    def instrument(self, app: Any, dispatcher: Any) -> None:
        """Wrap the app's store calls, its model, its tool, the dispatcher and the notice publish."""
        store = app.store
        for name in dir(type(store)):
            method = getattr(store, name, None)
            if not name.startswith("_") and callable(method) and name not in ("clock", "engine"):
                setattr(store, name, self.timed(
                    lambda n: "completion" if n in COMPLETION_CALLS else "claim+read", name, method))
        agent = app.registry["hot"]
        agent.model.generate = self.timed("model/tool", "generate", agent.model.generate)
        tool = agent.tools["noop"]
        object.__setattr__(tool, "execute", self.timed("model/tool", "noop", tool.execute))
        inner = dispatcher.inner
        inner.dispatch = self.timed("dispatch", "dispatch", inner.dispatch)
        inner.dispatch_and_publish = self.timed("dispatch", "dispatch", inner.dispatch_and_publish)
        app.events.publish = self.timed("notice", "publish", app.events.publish)
        app.events.send = self.timed("notice", "send", app.events.send)


def build_agent(turns: int) -> Any:
    """An agent whose scripted turn ``i < turns-1`` calls the no-op tool; the last one answers."""
    from lunora_jobs import define_agent, define_tool
    from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn

    noop = define_tool(
        name="noop", description="Does nothing.",
        input_schema={"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]},
        execute=lambda args, ctx: "ok",
    )
    script = [tool_call_turn(f"call_{i}", "noop", {"i": i}) for i in range(turns - 1)]
    script.append(final_turn("done"))
    return define_agent(name="hot", instructions="Benchmark agent.", model=ScriptedModel(script),
                        tools=[noop], max_turns=turns + 1)


def build_app(
    db_url: str, redis_url: str, queue: str, prefix: str, turns: int, portable: bool = False
) -> tuple[Any, Any]:
    """A ``Lunora`` app on the given endpoints, and its collecting dispatcher."""
    from lunora_jobs import Lunora
    from lunora_jobs.engine.events import RedisEventBus
    from lunora_jobs.engine.locks import RedisLock
    from lunora_jobs.store import create_store

    dispatcher = CollectingDispatcher(redis_url, queue)
    store = create_store(db_url)
    store.single_statement_completion = not portable
    app = Lunora([build_agent(turns)], store=store, dispatcher=dispatcher,
                 lock=RedisLock.from_url(redis_url, prefix=prefix),
                 events=RedisEventBus.from_url(redis_url, prefix=prefix))
    return app, dispatcher


def drive(app: Any, dispatcher: Any, runs: int, measure: Callable[[str, Callable[[], Any]], None]) -> None:
    """Start ``runs`` runs and execute every published step here, each inside ``measure(kind, fn)``."""
    started: list[Any] = []

    def start() -> None:
        started.append(app.agents.hot.run(input="go", thread_key="hot-" + uuid.uuid4().hex))

    for _ in range(runs):
        measure("start", start)
        handle = started.pop()
        while dispatcher.pending:
            task = dispatcher.pending.popleft()
            measure(task.kind, partial(app.execute_step, task.run_id, task.step))
        run = app.store.get_run(handle.id)
        if run is None or run.status != "completed":
            raise RuntimeError(f"benchmark run ended {run and run.status}: {run and run.error}")


def count_trips(db_url: str, queue: str, prefix: str, args: Any) -> dict[str, tuple[float, float, float]]:
    """Per step kind: mean (PostgreSQL round trips, Redis round trips, SQL statements)."""
    pg = RoundTripProxy(PG_HOST, PG_PORT, postgres=True).start()
    rd = RoundTripProxy(REDIS_HOST, REDIS_PORT).start()
    proxied_db = db_url.replace(f"{PG_HOST}:{PG_PORT}", f"{PG_HOST}:{pg.port}")
    app, dispatcher = build_app(proxied_db, f"redis://{REDIS_HOST}:{rd.port}/0", queue, prefix, args.turns,
                                args.portable)
    samples: dict[str, list[tuple[int, int, int]]] = defaultdict(list)

    def measure(kind: str, fn: Callable[[], Any]) -> None:
        before = (pg.count(), rd.count(), pg.count_statements())
        fn()
        after = (pg.count(), rd.count(), pg.count_statements())
        samples[kind].append(tuple(b - a for a, b in zip(before, after, strict=True)))  # type: ignore[arg-type]

    try:
        drive(app, dispatcher, 1, lambda kind, fn: fn())  # warm pools, prepared statements, imports
        drive(app, dispatcher, args.runs, measure)
    finally:
        app.close()
        pg.stop()
        rd.stop()
    return {kind: tuple(statistics.mean(s[i] for s in rows) for i in range(3))  # type: ignore[misc]
            for kind, rows in samples.items()}


def time_steps(db_url: str, queue: str, prefix: str, args: Any) -> dict[str, tuple[float, float]]:
    """Per step kind: median (wall ms, CPU ms) of ``execute_step`` on direct connections."""
    app, dispatcher = build_app(db_url, f"redis://{REDIS_HOST}:{REDIS_PORT}/0", queue, prefix, args.turns,
                                args.portable)
    samples: dict[str, list[tuple[float, float]]] = defaultdict(list)

    def measure(kind: str, fn: Callable[[], Any]) -> None:
        began, cpu = time.perf_counter(), time.process_time()
        fn()
        samples[kind].append(((time.perf_counter() - began) * 1000.0, (time.process_time() - cpu) * 1000.0))

    try:
        drive(app, dispatcher, 1, lambda kind, fn: fn())
        drive(app, dispatcher, args.runs, measure)
    finally:
        app.close()
    return {kind: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
            for kind, values in samples.items()}


def time_phases(db_url: str, queue: str, prefix: str, args: Any) -> dict[str, dict[str, tuple[float, float]]]:
    """Per step kind and phase: mean (wall ms, CPU ms) on direct connections."""
    app, dispatcher = build_app(db_url, f"redis://{REDIS_HOST}:{REDIS_PORT}/0", queue, prefix, args.turns,
                                args.portable)
    clock = PhaseClock()
    clock.instrument(app, dispatcher)
    samples: dict[str, list[dict[str, tuple[float, float]]]] = defaultdict(list)

    def measure(kind: str, fn: Callable[[], Any]) -> None:
        if kind == "start":  # the phases are a step's
            fn()
            return
        clock.reset()
        began, cpu = time.perf_counter(), time.process_time()
        fn()
        wall, used = (time.perf_counter() - began) * 1000.0, (time.process_time() - cpu) * 1000.0
        clock.wall["python"] = wall - sum(clock.wall[p] for p in PHASES if p != "python")
        clock.cpu["python"] = used - sum(clock.cpu[p] for p in PHASES if p != "python")
        samples[kind].append({p: (clock.wall[p], clock.cpu[p]) for p in PHASES})

    try:
        drive(app, dispatcher, 1, lambda kind, fn: fn())
        drive(app, dispatcher, args.runs, measure)
    finally:
        app.close()
    return {kind: {p: (statistics.mean(s[p][0] for s in rows), statistics.mean(s[p][1] for s in rows))
                   for p in PHASES}
            for kind, rows in samples.items()}


ASYNC_COMMIT = "options=-csynchronous_commit%3Doff"
"""A libpq connection option: every session of the ablation commits without waiting for the flush."""


def flush_ablation(
    db_url: str, queue: str, prefix: str, args: Any, rounds: int = 2,
) -> tuple[dict[str, dict[str, tuple[float, float]]], dict[str, dict[str, tuple[float, float]]]]:
    """``time_phases`` durable and with ``ASYNC_COMMIT``, alternating ``rounds`` times (the machine's
    load drifts); the mean of each."""
    unflushed_url = db_url + ("&" if "?" in db_url else "?") + ASYNC_COMMIT
    durable = [time_phases(db_url, queue, prefix, args)]
    ablated = [time_phases(unflushed_url, queue, prefix, args)]
    for _ in range(rounds - 1):
        durable.append(time_phases(db_url, queue, prefix, args))
        ablated.append(time_phases(unflushed_url, queue, prefix, args))
    return _mean_phases(durable), _mean_phases(ablated)


def _mean_phases(
    samples: list[dict[str, dict[str, tuple[float, float]]]],
) -> dict[str, dict[str, tuple[float, float]]]:
    return {kind: {p: (statistics.mean(s[kind][p][0] for s in samples),
                       statistics.mean(s[kind][p][1] for s in samples)) for p in PHASES}
            for kind in samples[0]}


def server_floor(db_url: str, samples: int = 200) -> tuple[float, float]:
    """Median ms of a read and of a durable one-row commit (WAL flush) on the bench's database."""
    engine = sa.create_engine(db_url, isolation_level="AUTOCOMMIT")
    reads: list[float] = []
    commits: list[float] = []
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("CREATE TABLE bench_commit_probe (i integer)"))
            for target, sql in ((reads, "SELECT 1"), (commits, "INSERT INTO bench_commit_probe VALUES (1)")):
                statement = sa.text(sql)
                for _ in range(samples):
                    began = time.perf_counter()
                    conn.execute(statement)
                    target.append((time.perf_counter() - began) * 1000.0)
    finally:
        engine.dispose()
    return statistics.median(reads), statistics.median(commits)


def main(argv: list[str] | None = None) -> int:
    """Run both phases and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--portable", action="store_true", help="ablation: portable completion, no pipelines")
    args = parser.parse_args(argv)
    import redis

    name = "lunora_hot_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    db_url = ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    queue, prefix = "hot-" + uuid.uuid4().hex[:8], "hot-" + uuid.uuid4().hex[:8]
    try:
        trips = count_trips(db_url, queue, prefix, args)
        ms = time_steps(db_url, queue, prefix, args)
        phases, unflushed = flush_ablation(db_url, queue, prefix, args)
        read_ms, commit_ms = server_floor(db_url)
    finally:
        client = redis.Redis(host=REDIS_HOST, port=REDIS_PORT)
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}",
                      *client.scan_iter(f"{prefix}:*"))
        client.close()
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    ablation = "; ABLATION --portable" if args.portable else ""
    print(f"hot path: execute_step on PostgreSQL + Celery publish on Redis; "
          f"{args.runs} runs x {2 * args.turns - 1} steps{ablation}")
    for kind in sorted(trips):
        pg_rt, redis_rt, sql = trips[kind]
        unit = "ms per run()" if kind == "start" else "ms/step"
        print(f"  {kind:5s}: {pg_rt:4.1f} PostgreSQL round trips ({sql:.1f} statements), "
              f"{redis_rt:.1f} Redis round trips, {ms[kind][0]:6.2f} {unit} (median; "
              f"{ms[kind][1]:.2f} ms CPU)")
    print("phases, mean ms per step: wall / CPU (this process)")
    print("         " + "".join(f"{p:>16s}" for p in PHASES))
    for kind in sorted(phases):
        print(f"  {kind:5s}: " + "".join(f"{w:8.2f}/{c:<7.2f}" for w, c in phases[kind].values()))
    print(f"server floor: a read {read_ms:.2f} ms, a durable commit (WAL flush) {commit_ms:.2f} ms "
          "(medians, idle one-row probes)")
    print("the WAL flushes, ablated (synchronous_commit = off; a diagnostic, never the engine's setting):")
    for kind in sorted(phases):
        durable, ablated = phases[kind], unflushed[kind]
        waits = {p: durable[p][0] - ablated[p][0] for p in ("claim+read", "completion")}
        print(f"  {kind:5s}: claim+read {durable['claim+read'][0]:.2f} -> {ablated['claim+read'][0]:.2f} ms, "
              f"completion {durable['completion'][0]:.2f} -> {ablated['completion'][0]:.2f} ms: "
              f"{sum(waits.values()):.2f} ms per step waits for its 2 flushes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
