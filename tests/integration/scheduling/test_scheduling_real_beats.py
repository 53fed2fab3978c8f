"""Delayed runs and cron fires on the real services: PostgreSQL, a private Redis broker, a Celery
worker and TWO ``celery beat`` processes (a misconfiguration the database claim must survive), with
a beat and the worker killed and restarted between scheduling and the due time.

Checked: every delayed run fires exactly once, within a bound after its due time, as the run whose
id derives from the occurrence; the cron entry fires once per fire time, with no gap and no double,
across the restarts.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from private_redis import PrivateRedis

from lunora_jobs.scheduling import occurrence_run_id
from workers.testing import BeatProcess, WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DELAYS_S = (3.0, 3.5, 4.0, 6.0)
# From the later of its due time and the fleet being back up (a restart's length is not the
# scheduler's doing) to the run completed; generous, since suites share the machine's two cores.
FIRE_BOUND_S = 10.0


@pytest.fixture
def env(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    queue = "sched-" + uuid.uuid4().hex[:8]
    values = {
        "CELERY_BROKER_URL": private_redis.url(1),
        "LUNORA_REDIS_URL": private_redis.url(0),
        "LUNORA_DATABASE_URL": pg_url,
        "LUNORA_QUEUE": queue,
        "LUNORA_APP": "sched_app:build_app",
        "LUNORA_SCHEDULER_TICK": "0.25",
        "LUNORA_SWEEP_INTERVAL": "1",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(HERE))
    yield values


def _wait(predicate: Any, timeout: float, explain: Any) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, explain()
        time.sleep(0.1)


def test_delayed_runs_and_cron_fire_once_with_two_beats_and_restarts(env: dict[str, str]) -> None:
    import sched_app

    app = sched_app.build_app()
    app.store.ensure_tables()
    queue = env["LUNORA_QUEUE"]
    procs: list[WorkerProcess] = []

    def start(kind: type[WorkerProcess], name: str) -> WorkerProcess:
        proc = kind(queue, env, name=f"{queue}-{name}", loglevel="INFO")
        procs.append(proc)
        return proc.start()

    def logs() -> str:
        return "\n".join(f"--- {p.name}\n{p.log()[-3000:]}" for p in procs)

    try:
        worker = start(WorkerProcess, "w1")
        beat_a = start(BeatProcess, "beat-a")
        start(BeatProcess, "beat-b")
        scheduled_at = time.time()
        ids = [app.scheduler.run_after(d, "later", {"input": f"follow up {i}"})
               for i, d in enumerate(DELAYS_S)]

        # Restarts between scheduling and the due times: beat A dies hard, the worker is replaced.
        beat_a.kill()
        worker.stop(timeout=10)
        start(WorkerProcess, "w2")
        start(BeatProcess, "beat-c")
        restarted_ms = int(time.time() * 1000)

        rows = {sid: app.scheduler.get(sid) for sid in ids}

        def all_done() -> bool:
            runs = [app.store.get_run(occurrence_run_id(sid, row.due_at or 0)) for sid, row in rows.items()]
            return all(r is not None and r.status == "completed" for r in runs)

        up_ms = max(restarted_ms, max(row.due_at or 0 for row in rows.values()))
        _wait(all_done, (up_ms / 1000 - time.time()) + FIRE_BOUND_S,
              lambda: f"{[app.scheduler.get(s) for s in ids]}\n{logs()}")
        for sid, row in rows.items():
            fired = app.scheduler.get(sid)
            run = app.store.get_run(occurrence_run_id(sid, row.due_at or 0))
            assert fired.status == "fired" and run is not None
            assert run.created_at >= (row.due_at or 0), "fired before its due time"
            late_ms = run.created_at - max(row.due_at or 0, restarted_ms)
            assert late_ms <= FIRE_BOUND_S * 1000, f"fired {late_ms} ms after due and the fleet up"
        later_runs = [r for r in app.store.list_runs() if r.agent == "later"]
        assert len(later_runs) == len(DELAYS_S), [r.id for r in later_runs]  # once each, not per beat

        # The cron entry: one run per fire time, never two for one time; while beat and workers run,
        # no fire time is skipped (during the restart, missed fires collapse into one by policy).
        every_ms = sched_app.PULSE_EVERY_S * 1000

        def pulse_times() -> list[int]:
            runs = {r.id for r in app.store.list_runs() if r.agent == "pulse"}
            candidates = range(int(scheduled_at * 1000) // every_ms * every_ms - 20 * every_ms,
                               int(time.time() * 1000) + every_ms, every_ms)
            times = [t for t in candidates if occurrence_run_id("cron:pulse", t) in runs]
            assert len(times) == len(runs), (sorted(runs), logs())  # every pulse run is one fire's
            return [t for t in times if t >= restarted_ms + every_ms]

        _wait(lambda: len(pulse_times()) >= 3, 6 * sched_app.PULSE_EVERY_S + FIRE_BOUND_S, logs)
        steady = pulse_times()
        assert steady == list(range(steady[0], steady[-1] + 1, every_ms)), f"a fire was missed: {steady}"
    finally:
        for proc in procs:
            proc.stop(timeout=5)
        app.close()
