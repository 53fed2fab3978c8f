"""Starting is atomic and misconfiguration is loud (issue 8, part 4), at the engine level.

- ``run()`` with a dispatcher that cannot send (a broker outage) returns the handle: the run, its user
  message and the outbox row of its first step are recorded in one transaction, and the sweep sends
  the row once the dispatcher works again (the broker restart itself: ``tests/chaos``);
- a start whose transaction fails records nothing and raises;
- a run of an agent that no live worker declares fails with ``UnknownAgentError`` once unclaimed past
  ``LUNORA_UNKNOWN_AGENT_S``, while the runs of another app on the same database (its own queue, its
  own live workers) are left alone however long they wait.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import sqlalchemy as sa
from engine_it_support import FakeClock, RecordingDispatcher

from lunora_jobs import Lunora, ScriptedModel, define_agent, final_turn
from lunora_jobs.config import Settings
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.locks import LocalLock
from lunora_jobs.engine.outbox import OUTBOX_GRACE_MS
from lunora_jobs.store import InMemoryStore, SqlStore

pytestmark = pytest.mark.integration


class Broker(RecordingDispatcher):
    """Records what it is sent, and refuses everything while ``down`` (as kombu does with no broker)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        if self.down:
            raise ConnectionRefusedError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        super().dispatch(tasks)


def _agent(name: str) -> Any:
    return define_agent(name=name, instructions="i", model=ScriptedModel([final_turn("ok")] * 5))


def _app(store: Any, agents: Sequence[str], dispatcher: Any, **settings: Any) -> Lunora:
    return Lunora([_agent(a) for a in agents], store=store, dispatcher=dispatcher, lock=LocalLock(),
                  settings=Settings(**settings))


def test_a_start_during_a_broker_outage_returns_and_the_sweep_sends_it_later() -> None:
    clock = FakeClock()
    store, broker = InMemoryStore(clock=clock), Broker()
    app = _app(store, ["a"], broker)
    broker.down = True

    handle = app.agents.a.run(input="hi", thread_key="t1")  # no exception: the run is recorded

    run = store.get_run(handle.id)
    assert run is not None and run.status == "running"
    assert [m.content for m in store.list_messages(run.thread_id)] == ["hi"]
    assert [(e.run_id, e.step) for e in store.due_outbox(clock.now, agents=["a"], limit=10)] == [
        (handle.id, "llm:turn:0")]
    assert broker.tasks == []

    assert app.sweep().dispatched == []  # still down: the row stays for the next tick
    broker.down = False
    assert app.sweep().dispatched == []  # its start may still be sending it: left alone a moment
    clock.advance(OUTBOX_GRACE_MS)
    report = app.sweep()
    assert [(t.run_id, t.step, t.kind) for t in report.dispatched] == [(handle.id, "llm:turn:0", "turn")]
    assert store.due_outbox(clock.now, agents=["a"], limit=10) == []  # sent once, then cleared

    for task in list(broker.tasks):
        app.execute_step(task.run_id, task.step)
    assert app.agents.a.wait(handle.id, timeout=5).status == "completed"


def test_a_sent_start_leaves_no_outbox_row() -> None:
    clock = FakeClock()
    store, broker = InMemoryStore(clock=clock), Broker()
    app = _app(store, ["a"], broker)
    handle = app.agents.a.run(input="hi", thread_key="t1")
    assert [(t.run_id, t.step) for t in broker.tasks] == [(handle.id, "llm:turn:0")]
    clock.advance(OUTBOX_GRACE_MS)
    assert store.due_outbox(clock.now, agents=["a"], limit=10) == []


def test_a_start_whose_transaction_fails_raises_with_nothing_recorded(sqlite_url: str) -> None:
    store, broker = SqlStore.from_url(sqlite_url), Broker()
    app = _app(store, ["a"], broker)

    def boom(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO AGENT_OUTBOX"):
            raise OSError("disk I/O error")

    sa.event.listen(store.engine, "before_cursor_execute", boom)
    try:
        with pytest.raises(OSError):
            app.agents.a.run(input="hi", thread_key="t1", run_id="r1")
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", boom)
    thread = store.get_thread("t1")
    assert thread is not None and thread.active_run_id is None and thread.status == "idle"
    assert store.get_run("r1") is None and store.list_messages(thread.id) == []
    assert broker.tasks == []
    # Nothing half-done blocks a retry of the same start.
    assert app.agents.a.run(input="hi", thread_key="t1", run_id="r1").id == "r1"
    assert [t.step for t in broker.tasks] == ["llm:turn:0"]
    store.close()


def test_a_run_no_live_worker_declares_fails_with_unknown_agent_error_after_the_bound() -> None:
    clock = FakeClock()
    store = InMemoryStore(clock=clock)
    bound = {"unknown_agent_s": 60}
    api = _app(store, ["a", "ghost", "b"], Broker(), **bound)  # the API knows every agent
    worker_a = _app(store, ["a"], Broker(), **bound)  # app A's workers (they run the sweep)
    worker_b = _app(store, ["b"], Broker(), **bound)  # app B on its own queue
    worker_a.declare_agents()
    worker_b.declare_agents()  # as each worker process loads its app

    ghost = api.agents.ghost.run(input="hi", thread_key="t-ghost")
    run_a = api.agents.a.run(input="hi", thread_key="t-a")  # unclaimed: its worker is busy
    run_b = api.agents.b.run(input="hi", thread_key="t-b")  # unclaimed too, for long

    clock.advance(30_000)
    assert worker_a.sweep().failed == []  # within the bound: nothing is failed yet
    clock.advance(20_000)
    worker_b.sweep()  # app B's sweep renews B's declaration
    clock.advance(20_000)  # 70 s after the start, 20 s after B's last sweep
    report = worker_a.sweep()

    assert report.failed == [ghost.id]
    clock.advance(30_000)
    assert worker_a.sweep().failed == []  # failed once
    result = api.agents.ghost.wait(ghost.id, timeout=5)
    assert result.status == "failed" and result.error is not None
    assert result.error.startswith("UnknownAgentError: no live worker declares agent 'ghost'"), result.error
    thread = store.get_thread("t-ghost")
    assert thread is not None and (thread.status, thread.active_run_id) == ("failed", None)
    for run_id in (run_a.id, run_b.id):
        run = store.get_run(run_id)
        assert run is not None and run.status == "running", run
