"""Round trips per durable step on PostgreSQL + Redis, counted on the wire, pinned so they cannot grow back.

PostgreSQL and the Redis broker are reached through ``bench/rtproxy.py`` relays that count request
bursts on the network: BEGIN, COMMIT, rollbacks on pool return and pool pings would all show up.
Steps run in this process (``execute_step``), publishing their successors through the real
``CeleryDispatcher`` to a private queue nobody consumes. Run with ``-s`` to see the numbers.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
import sqlalchemy as sa
from engine_it_support import weather_agent, weather_stub

from lunora_jobs import Lunora, ScriptedModel, final_turn, tool_call_turn, tool_calls_turn
from lunora_jobs.engine.events import RedisEventBus
from lunora_jobs.store import create_store

# Appended, not prepended: bench/rag.py must never shadow the ``rag`` package for later imports.
sys.path.append(str(Path(__file__).resolve().parents[3] / "bench"))
from rtproxy import RoundTripProxy

pytestmark = pytest.mark.integration

MAX_PG_PER_STEP = {"turn": 2, "tool": 2, "final turn": 2}
"""Turn: run read + claim + history read (ONE statement); completion (ONE statement). Tool: run + turn
memo read + claim (ONE statement); completion + fan-in ledger read (pipelined). Reads run in autocommit;
the pool's pre-ping polls the socket instead of the server."""

MAX_PG_PER_START = 2
"""``run()`` on a new thread: the thread's get-or-create, its run slot, the run with its user message,
the thread's seqs and status and the outbox row, as ONE statement of data-modifying CTEs
(``create_run_on_free_thread``), and the outbox row's delete once the broker took the dispatch. Was
16, then 10 (a read before the thread's insert, the run's start a transaction of six trips), then 4
(the get-or-create, the slot and the run's statement each a round trip)."""

MAX_REDIS_PER_STEP = {"turn": 1, "tool": 1, "final turn": 2}
"""The enqueue of what follows (one LPUSH; a fan-out of several calls is one pipelined round trip)
with the live-message notice pipelined after it (one PUBLISH); no run lock. Was 2: the notice a round
trip of its own. A final turn enqueues nothing: the run's ``completed`` status event, then the notice."""


class Collecting:
    """Publishes through ``CeleryDispatcher`` (a real broker round trip) and keeps the tasks to run here."""

    def __init__(self, broker_url: str, queue: str) -> None:
        from workers.dispatch import CeleryDispatcher

        self.inner = CeleryDispatcher(broker_url=broker_url, queue=queue)
        self.pending: list[Any] = []

    def dispatch(self, tasks: Sequence[Any]) -> None:
        self.inner.dispatch(tasks)
        self.pending.extend(tasks)

    def dispatch_and_publish(self, tasks: Sequence[Any], publish: Any) -> bool:
        carried = bool(self.inner.dispatch_and_publish(tasks, publish))
        self.pending.extend(tasks)
        return carried

    def revoke(self, run_id: str) -> None:
        """Nothing consumes the queue: nothing to revoke."""


@pytest.fixture
def relays(pg_url: str, redis_url: str) -> Iterator[tuple[RoundTripProxy, RoundTripProxy, str, str]]:
    url = sa.engine.make_url(pg_url)
    rurl = urlsplit(redis_url)
    pg = RoundTripProxy(url.host or "127.0.0.1", url.port or 5432).start()
    rd = RoundTripProxy(rurl.hostname or "127.0.0.1", rurl.port or 6379).start()
    proxied_pg = url.set(port=pg.port).render_as_string(hide_password=False)
    proxied_redis = f"redis://127.0.0.1:{rd.port}{rurl.path}"
    yield pg, rd, proxied_pg, proxied_redis
    pg.stop()
    rd.stop()


def test_round_trips_per_step_stay_pinned(
    relays: tuple[RoundTripProxy, RoundTripProxy, str, str], redis_url: str, redis_prefix: str
) -> None:
    pg, rd, proxied_pg, proxied_redis = relays
    queue = f"{redis_prefix}-q"
    dispatcher = Collecting(proxied_redis, queue)
    script = [tool_call_turn("c1", "get_weather", {"city": "Oslo"}),
              tool_calls_turn([("c2", "get_weather", {"city": "Bergen"}),
                               ("c3", "get_weather", {"city": "Tromsø"})]),
              final_turn("Cold everywhere.")]
    # Live notices on Redis, as every app with LUNORA_REDIS_URL publishes them: their PUBLISH counts
    # (the broker is the same server, so each rides with its step's enqueue).
    events = RedisEventBus.from_url(proxied_redis, prefix=redis_prefix)
    app = Lunora([weather_agent()], store=create_store(proxied_pg), dispatcher=dispatcher,
                 model=ScriptedModel(script * 5), functions={"weather:lookup": weather_stub}, events=events)
    counts: dict[str, list[tuple[int, int]]] = defaultdict(list)
    starts: list[int] = []
    try:
        for i in range(5):  # 3 runs warm the pool and psycopg's prepared statements (5th use of a query)
            before_start = pg.count()
            handle = app.agents.support.run(input="Weather?", thread_key=f"t{i}")
            if i >= 3:
                starts.append(pg.count() - before_start)
            while dispatcher.pending:
                task = dispatcher.pending.pop(0)
                before = (pg.count(), rd.count())
                app.execute_step(task.run_id, task.step)
                final = task.kind == "turn" and not dispatcher.pending  # it enqueued nothing: the run ended
                if i >= 3:
                    counts["final turn" if final else task.kind].append(
                        (pg.count() - before[0], rd.count() - before[1]))
            result = app.agents.support.result(handle.id)
            assert result is not None and result.stopped == "final"
    finally:
        app.close()
        client = redis.Redis.from_url(redis_url)
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        client.close()
    print("\nround trips per step (PostgreSQL, Redis):", dict(counts), "PostgreSQL per run() start:", starts)
    assert max(starts) <= MAX_PG_PER_START, starts
    assert sorted(counts) == ["final turn", "tool", "turn"]
    for kind, samples in counts.items():
        assert max(p for p, _ in samples) <= MAX_PG_PER_STEP[kind], (kind, samples)
        assert max(r for _, r in samples) <= MAX_REDIS_PER_STEP[kind], (kind, samples)
    assert events.published > 0  # the notices went out (through the counting relay)


def test_racing_tool_completions_always_dispatch_the_next_turn(pg_url: str) -> None:
    """The fused completion + fan-in read keeps the fan-in rule: of tools completing at the same
    instant, at least one sees them all done and dispatches the next turn — every time."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from engine_it_support import RecordingDispatcher

    width, rounds = 6, 8
    barrier = Barrier(width)

    def lookup(args: dict[str, Any]) -> dict[str, Any]:
        barrier.wait(timeout=10)  # every tool finishes its work together, then they race to complete
        return weather_stub(args)

    turn = tool_calls_turn([(f"c{i}", "get_weather", {"city": f"C{i}"}) for i in range(width)])
    dispatcher = RecordingDispatcher()
    model = ScriptedModel([turn, final_turn("done")] * rounds)
    app = Lunora([weather_agent()], store=create_store(pg_url), dispatcher=dispatcher, model=model,
                 functions={"weather:lookup": lookup})
    try:
        with ThreadPoolExecutor(width) as pool:
            for i in range(rounds):
                handle = app.agents.support.run(input="go", thread_key=f"race-{i}")
                app.execute_step(handle.id, "llm:turn:0")
                tools = [t.step for t in dispatcher.tasks if t.run_id == handle.id and t.kind == "tool"]
                assert len(tools) == width
                outcomes = list(pool.map(lambda s, h=handle.id: app.execute_step(h, s).status, tools))
                assert outcomes == ["completed"] * width
                next_turns = [t for t in dispatcher.tasks if t.run_id == handle.id and t.step == "llm:turn:1"]
                assert 1 <= len(next_turns) <= width
                assert app.execute_step(handle.id, "llm:turn:1").status == "completed"
                result = app.agents.support.result(handle.id)
                assert result is not None and result.stopped == "final"
    finally:
        app.close()
