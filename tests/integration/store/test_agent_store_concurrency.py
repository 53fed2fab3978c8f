"""Contract under concurrency: idempotent appends and seq from threads AND processes, one claimer
per step, and ``ensure_tables`` raced by several processes against an empty database."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from agent_store_support import append_worker, claim_worker, ensure_worker

from lunora_jobs.store import AgentStore, NewMessage, NewRun, SqlStore, create_engine
from lunora_jobs.store.ddl import index_names, table_names
from lunora_jobs.store.schema import metadata

pytestmark = pytest.mark.integration

# fork: real OS processes without re-importing everything per child (the suite shares 2 cores).
# Parents dispose their pools before forking, so no connection is ever shared with a child.
SPAWN = multiprocessing.get_context("fork")


def assert_clean_transcript(store: AgentStore, thread_id: str, expected_keys: set[str]) -> None:
    listed = store.list_messages(thread_id)
    keys = [m.key for m in listed]
    assert len(keys) == len(set(keys)), "a key was appended twice"
    assert set(keys) == expected_keys
    seqs = [m.seq for m in listed]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "seq must be unique and ordered"


def test_concurrent_appenders_in_threads(store: AgentStore) -> None:
    thread = store.ensure_thread("t1")
    workers, rounds = 6, 10
    barrier = threading.Barrier(workers)

    def work(worker: int) -> None:
        barrier.wait(timeout=30)
        for i in range(rounds):
            store.append_message(
                thread.id, NewMessage(key=f"shared:user:{i}", role="user", content=str(worker))
            )
            store.append_messages(thread.id, [NewMessage(key=f"w{worker}:user:{i}", role="user")])

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(work, range(workers)))
    expected = {f"shared:user:{i}" for i in range(rounds)} | {
        f"w{w}:user:{i}" for w in range(workers) for i in range(rounds)
    }
    assert_clean_transcript(store, thread.id, expected)


def _run_processes(targets: list[tuple[Callable[..., None], tuple[object, ...]]]) -> None:
    procs = [SPAWN.Process(target=t, args=a) for t, a in targets]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * len(procs)


@pytest.mark.slow
def test_concurrent_appenders_in_processes(sql_url: str) -> None:
    store = SqlStore.from_url(sql_url)
    thread = store.ensure_thread("t1")
    workers, rounds = 4, 8
    barrier = SPAWN.Barrier(workers)
    store.engine.dispose()
    _run_processes([(append_worker, (sql_url, thread.id, w, rounds, barrier)) for w in range(workers)])
    expected = {f"shared:user:{i}" for i in range(rounds)} | {
        f"w{w}:user:{i}" for w in range(workers) for i in range(rounds)
    }
    assert_clean_transcript(store, thread.id, expected)
    store.close()


@pytest.mark.slow
def test_exactly_one_process_claims_a_step(sql_url: str) -> None:
    store = SqlStore.from_url(sql_url)
    thread = store.ensure_thread("t1")
    store.create_run(NewRun(id="r1", thread_id=thread.id, agent="a", input=None))
    workers = 4
    barrier, results = SPAWN.Barrier(workers), SPAWN.Queue()
    store.engine.dispose()
    _run_processes([(claim_worker, (sql_url, "r1", w, barrier, results)) for w in range(workers)])
    outcomes = [results.get(timeout=5) for _ in range(workers)]
    claimed = [o for o in outcomes if o[0] == "claimed"]
    assert len(claimed) == 1, outcomes
    assert sorted(o[0] for o in outcomes) == ["busy"] * (workers - 1) + ["claimed"]
    step = store.get_step("r1", "llm:turn:0")
    assert step is not None and (step.lease_owner, step.generation) == (claimed[0][1], 1)
    store.close()


@pytest.mark.slow
def test_ensure_tables_raced_by_processes_on_an_empty_database(sql_url: str) -> None:
    workers = 4
    barrier, results = SPAWN.Barrier(workers), SPAWN.Queue()
    _run_processes([(ensure_worker, (sql_url, barrier, results)) for _ in range(workers)])
    issued = [results.get(timeout=5) for _ in range(workers)]
    engine = create_engine(sql_url)
    with engine.connect() as conn:
        assert set(metadata.tables) <= table_names(conn)
        wanted = {str(i.name).lower() for t in metadata.sorted_tables for i in t.indexes}
        assert wanted <= {n.lower() for n in index_names(conn)}
    engine.dispose()
    assert all(n >= 0 for n in issued) and sum(issued) > 0  # someone did the work, no one failed
    # A current schema afterwards: nothing more to do, and the store works.
    store = SqlStore.from_url(sql_url)
    assert store.ensure_thread("t").key == "t"
    store.close()
