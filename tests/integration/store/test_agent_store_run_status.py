"""A run's status and its thread's status change together (``transition_run_and_thread``).

Issue 8 saw a run ``awaiting_input`` while its thread still said ``running``: two statements. Now it
is one statement on PostgreSQL and MariaDB (one transaction on SQLite's single writer), and a reader
reading both rows in one query never sees them disagree.
"""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

from lunora_jobs.store import AgentStore, NewRun, SqlStore

pytestmark = pytest.mark.integration


def _running_run(store: AgentStore, key: str = "t1", run_id: str = "r1") -> tuple[str, str]:
    thread = store.ensure_thread(key)
    store.create_run(NewRun(run_id, thread.id, "a", {"input": "go"}))
    assert store.acquire_thread(thread.id, run_id)
    store.patch_thread(thread.id, status="running")
    return thread.id, run_id


def test_park_and_resume_move_run_and_thread(store: AgentStore) -> None:
    thread_id, run_id = _running_run(store)

    assert store.transition_run_and_thread(run_id, ("running",), thread_status="awaiting_input",
                                           status="awaiting_input")
    run, thread = store.get_run(run_id), store.get_thread_by_id(thread_id)
    assert run is not None and thread is not None
    assert (run.status, thread.status, thread.active_run_id) == ("awaiting_input", "awaiting_input", run_id)

    # A compare-and-set: from a status the run is not in, neither row moves.
    assert not store.transition_run_and_thread(run_id, ("running",), thread_status="failed", status="failed")
    run, thread = store.get_run(run_id), store.get_thread_by_id(thread_id)
    assert run is not None and thread is not None
    assert (run.status, thread.status) == ("awaiting_input", "awaiting_input")

    assert store.transition_run_and_thread(run_id, ("awaiting_input",), thread_status="running",
                                           status="running")
    thread = store.get_thread_by_id(thread_id)
    assert thread is not None and thread.status == "running"


def test_ending_releases_the_slot_with_the_status(store: AgentStore) -> None:
    thread_id, run_id = _running_run(store)

    assert store.transition_run_and_thread(run_id, ("running",), thread_status="failed", release=True,
                                           status="failed", error="boom")
    run, thread = store.get_run(run_id), store.get_thread_by_id(thread_id)
    assert run is not None and thread is not None
    assert (run.status, run.error) == ("failed", "boom")
    assert (thread.status, thread.active_run_id) == ("failed", None)


def test_a_run_that_does_not_hold_the_thread_leaves_it_alone(store: AgentStore) -> None:
    thread_id, holder = _running_run(store)
    store.create_run(NewRun("queued-1", thread_id, "a", {"input": "later"}, status="queued"))

    assert store.transition_run_and_thread("queued-1", ("queued",), thread_status="cancelled", release=True,
                                           status="cancelled")
    run, thread = store.get_run("queued-1"), store.get_thread_by_id(thread_id)
    assert run is not None and thread is not None
    assert run.status == "cancelled"
    assert (thread.status, thread.active_run_id) == ("running", holder)


def test_increments_are_refused(store: AgentStore) -> None:
    _, run_id = _running_run(store)
    with pytest.raises(ValueError):
        store.transition_run_and_thread(run_id, ("running",), thread_status="running", add_turns=1)


@pytest.mark.slow
def test_a_reader_never_sees_the_run_and_its_thread_disagree(sql_url: str) -> None:
    """A writer parks and resumes a run 150 times while a reader reads both rows in one query."""
    store = SqlStore.from_url(sql_url)
    try:
        _, run_id = _running_run(store)
        both = sa.text(
            "SELECT r.status, t.status FROM agent_runs r JOIN agent_threads t ON t.id = r.thread_id"
            " WHERE r.id = :run_id"
        )
        done = threading.Event()
        seen: list[tuple[str, str]] = []

        def read() -> None:
            with store.engine.connect() as conn:
                while not done.is_set():
                    row = conn.execute(both, {"run_id": run_id}).one()
                    conn.commit()  # a fresh snapshot for the next read
                    seen.append((str(row[0]), str(row[1])))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            for _ in range(150):
                assert store.transition_run_and_thread(run_id, ("running",), thread_status="awaiting_input",
                                                       status="awaiting_input")
                assert store.transition_run_and_thread(run_id, ("awaiting_input",), thread_status="running",
                                                       status="running")
            deadline = time.monotonic() + 30
            while len(seen) < 50 and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            done.set()
            reader.join(timeout=30)
        assert len(seen) >= 50, f"the reader ran only {len(seen)} reads"
        mixed = [pair for pair in seen if pair[0] != pair[1]]
        assert not mixed, f"{len(mixed)} of {len(seen)} reads saw a mix, e.g. {mixed[:3]}"
        assert {pair[0] for pair in seen} <= {"running", "awaiting_input"}
    finally:
        store.close()


def test_a_reopened_run_and_its_thread_say_running_together(store: AgentStore) -> None:
    thread_id, run_id = _running_run(store)
    assert store.transition_run_and_thread(run_id, ("running",), thread_status="failed", release=True,
                                           status="failed", error="boom")
    assert store.acquire_thread(thread_id, run_id)

    assert store.reopen_run(run_id, input={"input": "go"}, step_names=[])
    run, thread = store.get_run(run_id), store.get_thread_by_id(thread_id)
    assert run is not None and thread is not None
    assert (run.status, thread.status) == ("running", "running")
