"""Benchmark: the console's pages with 100k runs and 1M steps in PostgreSQL — p50/p95 response times.

    python bench/console.py [--runs 100000] [--steps-per-run 10] [--requests 200] [--keep]

It builds a fresh PostgreSQL database (the schema by ``ensure_tables``, the rows by server-side
``generate_series``: 10k threads of 100 owners, ``--runs`` runs over 5 agents, ``--steps-per-run`` ledger
rows per run, two usage rows per run), starts ``lunora api`` (uvicorn) on it, and times over HTTP:

- the runs page (``GET /runs?limit=50``): the admin's first page, a page 500 pages deep (keyset
  cursor), one owner's runs, a rare status (1% of runs), one agent;
- a run's timeline (``GET /runs/{id}/steps``) of random runs;
- the console page itself (``GET /console``).

Side by side in the same run it prints what keyset pagination buys: the deep page by cursor against
the same page by ``OFFSET`` (the query a naive list would run), timed in SQL. The machine may be
shared: figures are percentiles over ``--requests`` sequential requests each.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

ROOT = Path(__file__).resolve().parents[1]
PG_ADMIN = os.environ.get("LUNORA_BENCH_PG_ADMIN", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
T0 = 1_767_225_600_000
OWNERS = 100
THREADS = 10_000
AGENTS = 5
TOKEN = "bench-admin-token"
OWNER_TOKEN = "bench-owner-token"

_THREADS = """
INSERT INTO agent_threads (id, key, owner, title, status, state, model, agent, active_run_id,
                           input_tokens, output_tokens, next_seq, created_at, updated_at)
SELECT 'th' || g, 'thread-' || g, 'user-' || (g % :owners), NULL, 'completed', '{"note": null}', NULL,
       'agent-' || (g % :agents), NULL, 0, 0, 4, :t0 + g, :t0 + g
FROM generate_series(1, :threads) AS g
"""
_RUNS = """
INSERT INTO agent_runs (id, thread_id, agent, owner, status, input, result, error, stopped, turns,
                        input_tokens, output_tokens, created_at, updated_at)
SELECT 'run' || lpad(g::text, 8, '0'), 'th' || (g % :threads + 1), 'agent-' || (g % :agents),
       'user-' || ((g % :threads + 1) % :owners),
       CASE WHEN g % 100 = 0 THEN 'failed' WHEN g % 97 = 0 THEN 'awaiting_input' ELSE 'completed' END,
       '{"input": "hi"}', '{"text": "done", "output": null}', NULL, 'final', 5, 500, 250,
       :t0 + g * 1000, :t0 + g * 1000 + 4000
FROM generate_series(1, :runs) AS g
"""
_STEPS = """
INSERT INTO agent_steps (run_id, name, status, result, error, attempt, generation, lease_owner,
                         lease_expires_at, created_at, updated_at)
SELECT r.id,
       CASE WHEN s % 2 = 0 THEN 'llm:turn:' || (s / 2) ELSE 'tool:lookup:call-' || s END,
       'completed',
       CASE WHEN s % 2 = 0
            THEN '{"turn": {"text": null, "tool_calls": [{"id": "call", "name": "lookup", "arguments": {}}]}}'
            ELSE '{"output": "found it", "is_error": false}' END,
       NULL, 1, 1, NULL, 0, r.created_at + s * 350, r.created_at + s * 350 + 300
FROM agent_runs r CROSS JOIN generate_series(0, :steps - 1) AS s
"""
_USAGE = """
INSERT INTO agent_token_usage (actor, model, thread_id, run_id, step, input_tokens, output_tokens,
                               cache_read_tokens, cache_write_tokens, cost_usd, created_at)
SELECT r.owner, 'gpt-4o-mini', r.thread_id, r.id, 'llm:turn:' || t, 250, 125, 0, 0,
       CASE WHEN t = 0 THEN 0.0002 ELSE NULL END, r.created_at
FROM agent_runs r CROSS JOIN generate_series(0, 1) AS t
"""
_OFFSET_PAGE = ("SELECT r.id FROM agent_runs r JOIN agent_threads t ON t.id = r.thread_id "
                "ORDER BY r.created_at DESC, r.id DESC OFFSET :offset LIMIT 50")
_KEYSET_PAGE = ("SELECT r.id FROM agent_runs r JOIN agent_threads t ON t.id = r.thread_id "
                "WHERE (r.created_at, r.id) < (:c, :i) ORDER BY r.created_at DESC, r.id DESC LIMIT 50")


def create_database() -> tuple[str, str]:
    """A fresh database; returns (its URL, its name)."""
    name = "lunora_bench_console_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return PG_ADMIN.rsplit("/", 1)[0] + "/" + name, name


def drop_database(name: str) -> None:
    """Drop the benchmark database."""
    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def load(url: str, runs: int, steps: int) -> dict[str, float]:
    """Schema + rows; returns seconds per phase."""
    from lunora_jobs.store import create_store

    store = create_store(url)
    store.ensure_tables()
    store.close()
    engine = sa.create_engine(url)
    params = {"owners": OWNERS, "agents": AGENTS, "threads": THREADS, "runs": runs, "steps": steps, "t0": T0}
    took: dict[str, float] = {}
    for phase, sql in (("threads", _THREADS), ("runs", _RUNS), ("steps", _STEPS), ("usage", _USAGE)):
        started = time.perf_counter()
        with engine.begin() as conn:
            conn.execute(sa.text(sql), params)
        took[phase] = time.perf_counter() - started
    with engine.begin() as conn:
        conn.execute(sa.text("ANALYZE"))
        counts = {t: conn.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one()
                  for t in ("agent_runs", "agent_steps", "agent_token_usage")}
    engine.dispose()
    phases = ", ".join(f"{k} {v:.1f}s" for k, v in took.items())
    print(f"loaded {counts['agent_runs']:,} runs, {counts['agent_steps']:,} steps, "
          f"{counts['agent_token_usage']:,} usage rows  ({phases})")
    return took


APP_MODULE = """
from lunora_jobs import Lunora, define_agent

app = Lunora.from_env(agents=[define_agent(name=f"agent-{i}", instructions="Bench.", model="offline")
                              for i in range(5)])
"""


def start_api(url: str, workdir: Path) -> Any:
    """``lunora api`` on the benchmark database, serving an app with the five agents the rows name (no
    run is started). The app module is written to ``workdir``: ``bench/`` itself must not be on the
    path (its ``rag.py`` would shadow the ``rag`` package)."""
    from lunora_jobs.api.testing import ApiProcess

    (workdir / "console_bench_app.py").write_text(APP_MODULE)
    tokens = workdir / "tokens.json"
    tokens.write_text(json.dumps([{"subject": "ops", "token": TOKEN, "admin": True},
                                  {"subject": "user-7", "token": OWNER_TOKEN}]))
    path = [str(workdir), str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = {"LUNORA_DATABASE_URL": url, "LUNORA_API_TOKENS_FILE": str(tokens),
           "LUNORA_APP": "console_bench_app:app", "PYTHONPATH": os.pathsep.join(path),
           "CELERY_BROKER_URL": "", "LUNORA_REDIS_URL": ""}
    return ApiProcess(env).start()


def timed(client: httpx.Client, paths: list[str], token: str) -> list[float]:
    """Milliseconds per request (sequential; every answer must be 200)."""
    out = []
    for path in paths:
        started = time.perf_counter()
        response = client.get(path, headers={"Authorization": f"Bearer {token}"})
        out.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"{path}: {response.status_code} {response.text[:300]}")
    return out


def pct(samples: list[float], q: float) -> float:
    """The q-th percentile (nearest rank)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def sql_ms(url: str, query: str, params: dict[str, Any], repeats: int) -> float:
    """Median milliseconds of ``query`` in SQL (no HTTP)."""
    engine = sa.create_engine(url)
    samples = []
    with engine.connect() as conn:
        for _ in range(repeats):
            started = time.perf_counter()
            conn.execute(sa.text(query), params).fetchall()
            samples.append((time.perf_counter() - started) * 1000)
    engine.dispose()
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    """Load, serve, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--steps-per-run", type=int, default=10)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="Keep the database afterwards.")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    url, name = create_database()
    api = None
    try:
        load(url, args.runs, args.steps_per_run)
        with tempfile.TemporaryDirectory() as tmp:
            api = start_api(url, Path(tmp))
            rng = random.Random(7)
            n = args.requests
            with httpx.Client(base_url=api.url, timeout=30) as client:
                first = client.get("/runs?limit=50", headers={"Authorization": f"Bearer {TOKEN}"}).json()
                cursor = first["next_cursor"]
                deep = min(500, args.runs // 100)  # halfway at most, so a next page exists
                for _ in range(deep - 1):  # walk the pages to get a real deep cursor
                    cursor = client.get(f"/runs?limit=50&cursor={cursor}",
                                        headers={"Authorization": f"Bearer {TOKEN}"}).json()["next_cursor"]
                deep_created, _, deep_id = cursor.partition("~")
                run_ids = [f"run{rng.randint(1, args.runs):08d}" for _ in range(n)]
                cases = {
                    "runs page 1 (admin)": (["/runs?limit=50"] * n, TOKEN),
                    f"runs page {deep + 1} (cursor)": ([f"/runs?limit=50&cursor={cursor}"] * n, TOKEN),
                    "runs of one owner": (["/runs?limit=50"] * n, OWNER_TOKEN),
                    "runs filtered: failed": (["/runs?limit=50&status=failed"] * n, TOKEN),
                    "runs filtered: agent": (["/runs?limit=50&agent=agent-3"] * n, TOKEN),
                    "run timeline (steps)": ([f"/runs/{r}/steps" for r in run_ids], TOKEN),
                    "console page": (["/console"] * n, TOKEN),
                }
                timed(client, ["/runs?limit=50"] * 20, TOKEN)  # warm the pool and the plans
                print(f"\n{'GET':<26}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}   ({n} requests each)")
                for label, (paths, token) in cases.items():
                    samples = timed(client, paths, token)
                    print(f"{label:<26}{pct(samples, 50):>9.1f}{pct(samples, 95):>9.1f}{max(samples):>9.1f}")
        offset = sql_ms(url, _OFFSET_PAGE, {"offset": deep * 50}, 15)
        keyset = sql_ms(url, _KEYSET_PAGE, {"c": int(deep_created), "i": deep_id}, 15)
        print(f"\npage {deep + 1} in SQL: OFFSET {offset:.1f} ms, keyset {keyset:.2f} ms -> keyset is "
              f"{offset / max(keyset, 1e-6):.0f}x faster (and stays flat however deep the page)")
    finally:
        if api is not None:
            api.stop()
        if not args.keep:
            drop_database(name)
        else:
            print(f"kept database {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
