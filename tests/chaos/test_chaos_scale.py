"""Chaos at scale: many concurrent runs with parallel tool calls and approvals, while workers are
SIGKILLed, the broker is flushed, the database restarts and beat restarts.

Every run of the ``scale`` agent (``chaos_app``) fans out three ``slow`` calls, then a ``pay`` call
that waits for a human approval beside two more ``slow`` calls, then answers: ten ledger steps. The
runs arrive during the first part of the chaos on 2-process workers, over a private PostgreSQL
(``private_pg``: it is restarted) and a private Redis (``private_redis``: its broker db is flushed);
the test approves each run's ``pay`` call a while after it started, so the runs are all in flight
together (most parked on their approval) and keep arriving at every stage while the chaos lasts.
Beat drives the sweep. The engine's default lease (6 s) and sweep grace (30 s); beat ticks every
``SWEEP_INTERVAL_S``.

A seeded chaos loop (``LUNORA_CHAOS_SEED`` replays another sequence) SIGKILLs, every
``Scale.kill_every_s``, a random pool process or a whole worker group (replaced at once, like a
restarted machine: it boots while the loop goes on), and after seeded kills, one fault at a time:
FLUSHDB of the broker (every queued message is lost), ``pg_ctl restart -m immediate`` of the
database (a crash), and a SIGKILL plus restart of beat.

Recovery time: at each kill, the ledger steps whose lease a killed process held (the lease owner
names the process) are stranded; each must be claimed again (or finish) within
``RECOVERY_BOUND_S`` of the kill.

Afterwards every run must have completed with its exact transcript, no completed step run twice
and every effect applied exactly once (``chaos_support.assert_exactly_once``: the tools' effects
table, keyed by ``<run_id>:<idempotency key>``), and no ledger row may be left leased.

The default suite runs the ``CI`` configuration; ``pytest -s tests/chaos/test_chaos_scale.py
--chaos-full`` runs the ``FULL`` one (100 runs, 4 workers, 24 kills). Both print a one-line summary.
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from chaos_app import SCALE_FIRST, SCALE_SECOND
from chaos_support import (
    assert_exactly_once,
    chaos_fleet,
    chaos_seed,
    kill_one,
    leased_by,
    live_workers,
    start_run,
    through_outage,
    wait_for,
)
from fleet_support import TERMINAL, Fleet
from pg_private import PrivatePostgres
from private_redis import PrivateRedis, flush_owned

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEED = chaos_seed(20261201)
RECOVERY_BOUND_S = 15.0
SWEEP_INTERVAL_S = 1.0
FAULTS_S = 20.0
"""About how long the three faults take on a loaded machine (beat boots, PostgreSQL restarts): runs
keep arriving and being approved until past them."""
TOOLS = [*(f"tool:slow:{c}" for c in SCALE_FIRST), "tool:pay:p1",
         *(f"tool:slow:{c}" for c in SCALE_SECOND[1:])]
STEPS = {"llm:turn:0", "llm:turn:1", "llm:turn:2", "approval:p1", *TOOLS}


@dataclass(frozen=True)
class Scale:
    """One configuration of the chaos run."""

    name: str
    runs: int
    workers: int
    kills: int
    kill_every_s: tuple[float, float]
    """The pause between two kills is drawn from this range."""
    slow_s: float
    """How long each ``slow`` call works (kills land mid-step)."""
    timeout_s: float
    """Bound on the whole run, chaos included (a loaded 2-core machine)."""


CI = Scale("ci", runs=20, workers=3, kills=8, kill_every_s=(1.5, 4.0), slow_s=0.4, timeout_s=240)
FULL = Scale("full", runs=100, workers=4, kills=24, kill_every_s=(3.0, 6.0), slow_s=0.3, timeout_s=900)


@pytest.fixture
def scale(request: pytest.FixtureRequest) -> Scale:
    """``FULL`` under ``--chaos-full``, else ``CI``."""
    return FULL if request.config.getoption("--chaos-full") else CI


@dataclass
class Chaos:
    """What the chaos loop did and measured."""

    started: float = field(default_factory=time.monotonic)
    kills: list[dict[str, Any]] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    stranded: dict[tuple[str, str], tuple[int, float, dict[str, Any]]] = field(default_factory=dict)
    """(run id, step) -> (attempt it was killed in, monotonic time of the kill, the kill), until it
    moves again."""
    recovered: list[float] = field(default_factory=list)
    """Seconds from a kill until each step it stranded moved again."""
    approved: set[str] = field(default_factory=set)
    replacements: list[threading.Thread] = field(default_factory=list)
    max_queue: int = 0

    def at(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def context(self) -> str:
        return (f"seed={SEED} (LUNORA_CHAOS_SEED replays it) kills={self.kills} events={self.events} "
                f"recovered={sorted(round(t, 1) for t in self.recovered)} still stranded={self.stranded}")


def _replace_in_background(fleet: Fleet, chaos: Chaos) -> Callable[[], None]:
    """Start a replacement worker on a thread (a machine booting) while the loop keeps measuring."""
    def replace() -> None:
        thread = threading.Thread(target=fleet.start_worker, kwargs={"concurrency": 2}, daemon=True)
        thread.start()
        chaos.replacements.append(thread)

    return replace


def _kill(fleet: Fleet, chaos: Chaos, rng: random.Random) -> None:
    """One random SIGKILL; remember the steps it stranded (read from the ledger at once)."""
    queued = int(fleet.broker.llen(fleet.queue))
    kill = kill_one(fleet, rng, chaos.started, replace=_replace_in_background(fleet, chaos))
    killed_at = time.monotonic()
    stranded = leased_by(fleet, kill["pids"])
    now_ms = time.time() * 1000
    # When the stranded leases lapse (seconds after the kill): the sweep may take them over from then.
    lapse = [round((expires - now_ms) / 1000, 1) for _, expires in stranded.values()]
    # A sweep lock left by a killed sweeper makes every tick skip until it expires.
    sweep_lock = [fleet.counters.pttl(k) for k in fleet.counters.scan_iter(match="*sweep*")]
    kill.update(queued=queued, stranded=len(stranded), lapse=lapse, sweep_lock_ms=sweep_lock, recovered=[])
    chaos.kills.append(kill)
    for key, (attempt, _) in stranded.items():
        chaos.stranded.setdefault(key, (attempt, killed_at, kill))


def _poll_recovery(fleet: Fleet, chaos: Chaos) -> None:
    """Record the stranded steps that were claimed again (a new attempt) or finished."""
    for (run_id, step), (attempt, killed_at, kill) in list(chaos.stranded.items()):
        row = through_outage(lambda r=run_id, s=step: fleet.app.store.get_step(r, s))
        if row is None or row.status != "running" or row.attempt > attempt:
            took = time.monotonic() - killed_at
            chaos.recovered.append(took)
            kill["recovered"].append(round(took, 1))
            del chaos.stranded[(run_id, step)]


def _approve_due(fleet: Fleet, chaos: Chaos, approve_at: dict[str, float], tags: dict[str, str]) -> None:
    """Approve the ``pay`` call of every parked run whose approval moment has come."""
    now = time.monotonic()
    parked = through_outage(lambda: fleet.app.store.list_runs(status="awaiting_input"))
    for run in parked:
        if run.id in tags and run.id not in chaos.approved and now >= approve_at[run.id]:
            through_outage(lambda r=run.id: fleet.app.approvals.resolve(
                f"{fleet.prefix}-{tags[r]}", "p1", approve=True))
            chaos.approved.add(run.id)


def _unfinished(fleet: Fleet, run_ids: list[str]) -> list[str]:
    runs = through_outage(lambda: {r: fleet.app.store.get_run(r) for r in run_ids})
    return [r for r, run in runs.items() if run is None or run.status not in TERMINAL]


def _leased_rows(fleet: Fleet) -> list[Any]:
    """Every ledger row of the database still running (none may be, once every run finished)."""
    with fleet.app.store.engine.connect() as conn:
        return list(conn.execute(sa.text(
            "SELECT run_id, name, attempt, lease_owner FROM agent_steps WHERE status = 'running'")))


def _assert_exact_transcript(fleet: Fleet, run_id: str, tag: str) -> None:
    """The thread holds exactly: the input, each turn's calls, each call's result, the answer."""
    run = fleet.app.store.get_run(run_id)
    assert run is not None
    messages = fleet.app.store.list_messages(run.thread_id)
    got = [(m.role, m.content if m.role != "assistant" or not m.tool_calls else
            tuple(c["id"] for c in m.tool_calls), m.tool_call_id) for m in messages]
    results = {c: f"slow {c}" for c in [*SCALE_FIRST, *SCALE_SECOND[1:]]} | {"p1": "paid p1"}

    def turn(calls: list[str]) -> list[tuple[str, Any, str | None]]:
        # The results of one turn's parallel calls, in whichever order they finished.
        return [("assistant", tuple(calls), None),
                *sorted(("tool", results[c], c) for c in calls)]

    expected = [("user", tag, None), *turn(SCALE_FIRST), *turn(SCALE_SECOND), ("assistant", "scaled", None)]
    normalized = [*got[:2], *sorted(got[2:5]), got[5], *sorted(got[6:9]), *got[9:]]
    assert normalized == expected, f"run {run_id}: transcript {got}"


def test_chaos_at_scale_every_run_finishes_exactly_once_and_recovers_within_15_s(
    scale: Scale, private_pg: PrivatePostgres, private_pg_url: str, private_redis: PrivateRedis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fleet = chaos_fleet(private_pg_url, private_redis, monkeypatch)
    # The engine's defaults for the lease (6 s) and the sweep's grace (30 s); beat ticks every second.
    for name in ("LUNORA_LEASE_S", "LUNORA_SWEEP_GRACE_MS"):
        fleet.env.pop(name)
        monkeypatch.delenv(name)
    fleet.env["LUNORA_SWEEP_INTERVAL"] = str(SWEEP_INTERVAL_S)
    fleet.env["CHAOS_SLOW_S"] = str(scale.slow_s)
    rng = random.Random(SEED)
    chaos = Chaos()
    scratch = Path(tempfile.mkdtemp(prefix="lunora-chaos-"))
    try:
        for _ in range(scale.workers):
            fleet.start_worker(concurrency=2)
        beat = fleet.start_beat()
        chaos.started = time.monotonic()
        # Runs arrive during the first part of the chaos, and each one's approval comes a while after
        # it started: all of them are in flight together (most parked on their approval), while
        # the fleet keeps capacity to take a stranded step over (a saturated queue delays that: see
        # docs/guarantees.md).
        window = scale.kills * sum(scale.kill_every_s) / 2 + FAULTS_S
        arrivals = sorted(chaos.started + rng.uniform(0, 0.6 * window) for _ in range(scale.runs))
        runs: dict[str, str] = {}
        approve_at: dict[str, float] = {}

        def arrive() -> None:
            while arrivals and arrivals[0] <= time.monotonic():
                run_id, tag = start_run(fleet, "scale")
                runs[run_id] = tag
                approve_at[run_id] = arrivals.pop(0) + rng.uniform(1, 0.4 * window)
        # After which kills the broker flush, the database restart and the beat restart happen: one
        # fault at a time (each once the steps stranded by earlier kills moved again, the next kill
        # once the system is back), so each kill's recovery time is its own.
        after = dict(zip(("flush", "database", "beat"), rng.sample(range(1, scale.kills), 3), strict=True))
        heartbeat = scratch / "beat-heartbeat"

        def fault(name: str) -> None:
            nonlocal beat
            began = time.monotonic()
            if name == "flush":
                flush_owned(fleet.broker)  # every queued message is lost
            elif name == "database":
                private_pg.restart("immediate")  # a crash: no checkpoint, WAL replayed on start
            else:
                beat.kill()
                heartbeat.unlink(missing_ok=True)
                beat = fleet.start_beat(heartbeat_file=heartbeat)
                wait_for(heartbeat.exists, 60, "the restarted beat to tick")
            chaos.events.append(f"{name} at {chaos.at()}s ({time.monotonic() - began:.1f}s)")

        next_kill = time.monotonic() + rng.uniform(*scale.kill_every_s)
        deadline = chaos.started + scale.timeout_s
        while len(chaos.kills) < scale.kills or after or arrivals:
            assert time.monotonic() < deadline, f"chaos loop ran out of time: {chaos.context()}"
            through_outage(arrive)
            _approve_due(fleet, chaos, approve_at, runs)
            _poll_recovery(fleet, chaos)
            chaos.max_queue = max(chaos.max_queue, int(fleet.broker.llen(fleet.queue)))
            due = [name for name, n in after.items() if n <= len(chaos.kills)]
            if due and not chaos.stranded:
                fault(due[0])
                del after[due[0]]
                next_kill = time.monotonic() + rng.uniform(*scale.kill_every_s)
            elif (not due and len(chaos.kills) < scale.kills and time.monotonic() >= next_kill
                  and live_workers(fleet)):
                _kill(fleet, chaos, rng)
                next_kill = time.monotonic() + rng.uniform(*scale.kill_every_s)
            time.sleep(0.1)
        chaos_s = time.monotonic() - chaos.started

        run_ids = list(runs)
        approve_at = dict.fromkeys(run_ids, 0.0)  # the chaos is over: approve whatever still waits
        while (pending := _unfinished(fleet, run_ids)) or chaos.stranded:
            assert time.monotonic() < deadline, (
                f"{len(pending)} runs not finished: {chaos.context()}\n{fleet.explain(pending[0])}"
                if pending else f"stranded steps never moved: {chaos.context()}")
            _approve_due(fleet, chaos, approve_at, runs)
            _poll_recovery(fleet, chaos)
            time.sleep(0.2)
        total_s = time.monotonic() - chaos.started
        for thread in chaos.replacements:
            thread.join(timeout=60)

        context = chaos.context()
        assert len(live_workers(fleet)) == scale.workers, context
        for run_id, tag in runs.items():
            assert_exactly_once(fleet, run_id, tag, expected_steps=STEPS, turns=3, tool_messages=len(TOOLS),
                                final_text="scaled", context=context)
            _assert_exact_transcript(fleet, run_id, tag)
        assert _leased_rows(fleet) == [], context
        assert chaos.approved == set(run_ids), context
        assert sum(k["stranded"] for k in chaos.kills) >= 1, f"no kill hit a running step: {context}"
        slowest = max(chaos.recovered)
        summary = (
            f"chaos summary [{scale.name}]: seed={SEED} runs={scale.runs} workers={scale.workers}x2 "
            f"kills={len(chaos.kills)} ({sum(k['victim'] == 'worker' for k in chaos.kills)} whole workers) "
            f"stranded steps={len(chaos.recovered)} "
            f"recovery median={statistics.median(chaos.recovered):.1f}s "
            f"max={slowest:.1f}s (bound {RECOVERY_BOUND_S:.0f}s) | {'; '.join(chaos.events)} | "
            f"max queue={chaos.max_queue} chaos={chaos_s:.0f}s total={total_s:.0f}s | all completed, "
            f"exact transcripts, effects once, nothing leased"
        )
        print(f"\n{summary}\n{context}")
        assert slowest <= RECOVERY_BOUND_S, f"{summary}\n{context}"
    finally:
        fleet.close()
        shutil.rmtree(scratch, ignore_errors=True)
